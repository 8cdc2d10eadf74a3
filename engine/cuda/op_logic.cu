/* op_logic.cu: And, Or, Xor, Not, BitShift, IsNaN, IsInf, Where, Cast and CastLike on the GPU,
 * with the rules of engine/core/elt_rules.h, which engine/cpu/op_logic.c shares: every op
 * here gives the CPU's bits. */
#include <stdint.h>
#include <string.h>

#include "../core/elt_rules.h"
#include "kernels.cuh"

/* ---- IsNaN, IsInf, Not: one byte out per element ---- */

static __global__ void
is_nan_kernel(const float *x, uint8_t *y, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = isnan(x[i]) != 0;
}

static __global__ void
is_inf_kernel(const float *x, uint8_t *y, int64_t n, int pos, int neg)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = isinf(x[i]) && (x[i] > 0.f ? pos : neg);
}

static __global__ void
not_kernel(const uint8_t *x, uint8_t *y, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = x[i] == 0;
}

extern "C" int
gd__cuda_is_nan(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    is_nan_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, (uint8_t *)c->out[0]->data, n);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_is_inf(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    is_inf_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, (uint8_t *)c->out[0]->data, n, c->params->detect_positive,
        c->params->detect_negative);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_logical_not(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    not_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const uint8_t *)c->in[0]->data, (uint8_t *)c->out[0]->data, n);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- And, Or, Xor, BitShift: op_eltwise.cu's integer kernel ---- */

extern "C" int
gd__cuda_logical_and(struct gd_op_call *c, struct gd_err *err)
{
    return gd__cuda_int_binary(c, c->in[0], c->in[1], GD_IOP_AND, 0, err);
}

extern "C" int
gd__cuda_logical_or(struct gd_op_call *c, struct gd_err *err)
{
    return gd__cuda_int_binary(c, c->in[0], c->in[1], GD_IOP_OR, 0, err);
}

extern "C" int
gd__cuda_logical_xor(struct gd_op_call *c, struct gd_err *err)
{
    return gd__cuda_int_binary(c, c->in[0], c->in[1], GD_IOP_XOR, 0, err);
}

extern "C" int
gd__cuda_bit_shift(struct gd_op_call *c, struct gd_err *err)
{
    return gd__cuda_int_binary(c, c->in[0], c->in[1],
                               c->params->shift_left ? GD_IOP_SHL : GD_IOP_SHR, 0, err);
}

/* ---- Where: a byte copy of X's or Y's element, by element size ---- */

static __device__ __forceinline__ void
where_at(const gd__cuda_walk &w, int64_t i, int64_t *off)
{
    gd__cuda_walk_offsets(w, i, 3, off);
}

static __device__ __forceinline__ void
where_at(const gd__cuda_walk &w, uint32_t i, uint32_t *off)
{
    gd__cuda_walk_offsets32(w, i, 3, off);
}

/* One element per thread over the coalesced walk; I is uint32_t where the walk fits. */
template <class T, class I>
static __global__ void
where_kernel(const uint8_t *cond, const T *x, const T *o, T *y, I n, gd__cuda_walk w)
{
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        I off[3];
        where_at(w, i, off);
        y[i] = cond[off[0]] ? x[off[1]] : o[off[2]];
    }
}

/*
 * The same in vectors of 16 / sizeof(T) elements (where_vec_ok): along the innermost axis,
 * whose length is a multiple of a vector, each input steps by one element (vec[k]: one
 * aligned load of the vector) or stays (one value for the whole vector), as a mask over
 * rows, a scalar fill and the scores of a masked attention do.
 */
template <class T, class I>
static __global__ void
where_vec_kernel(const uint8_t *cond, const T *x, const T *o, T *y, I nv, gd__cuda_walk w,
                 int c_vec, int x_vec, int o_vec)
{
    const int V = 16 / (int)sizeof(T);
    I step = (I)gridDim.x * blockDim.x;
    for (I j = (I)blockIdx.x * blockDim.x + threadIdx.x; j < nv; j += step) {
        I off[3];
        where_at(w, j * (I)V, off);
        struct __align__(16) vec { T e[16 / sizeof(T)]; } vx, vo, r;
        struct __align__(16 / sizeof(T)) mask { uint8_t e[16 / sizeof(T)]; } m;
        if (c_vec)
            m = *(const mask *)(cond + off[0]);
        else
            for (int k = 0; k < V; k++)
                m.e[k] = cond[off[0]];
        if (x_vec)
            vx = *(const vec *)(x + off[1]);
        else
            for (int k = 0; k < V; k++)
                vx.e[k] = x[off[1]];
        if (o_vec)
            vo = *(const vec *)(o + off[2]);
        else
            for (int k = 0; k < V; k++)
                vo.e[k] = o[off[2]];
#pragma unroll
        for (int k = 0; k < V; k++)
            r.e[k] = m.e[k] ? vx.e[k] : vo.e[k];
        ((vec *)y)[j] = r;
    }
}

/* Whether the coalesced walk over (cond, x, o) of element size es can go by 16-byte vectors
 * of the output; vec[k] says which inputs load whole vectors. */
static int
where_vec_ok(const gd__cuda_walk *w, const void *const *base, const void *y, size_t es,
             int *vec)
{
    int last = w->ndim - 1;
    int64_t per = (int64_t)(16 / es);
    if (w->ndim < 1 || es > 8 || w->shape[last] % per != 0 || (uintptr_t)y % 16 != 0)
        return 0;
    for (int k = 0; k < 3; k++) {
        int64_t inner = w->stride[k][last];
        size_t align = k == 0 ? (size_t)per : 16; /* the mask's vector is per bytes */
        if (inner != 0 && inner != 1)
            return 0;
        vec[k] = inner == 1;
        if (!vec[k])
            continue;
        if ((uintptr_t)base[k] % align != 0)
            return 0;
        for (int d = 0; d < last; d++)
            if (w->stride[k][d] % per != 0)
                return 0;
    }
    return 1;
}

template <class T>
static void
where_launch(const uint8_t *cond, const void *x, const void *o, void *y, int64_t n,
             const gd__cuda_walk &w, cudaStream_t stream)
{
    const void *base[3] = {cond, x, o};
    int vec[3] = {0, 0, 0};
    int fits = gd__cuda_walk_fits32(&w, 3, n);
    if (where_vec_ok(&w, base, y, sizeof(T), vec)) {
        int64_t nv = n / (int64_t)(16 / sizeof(T));
        if (fits)
            where_vec_kernel<<<gd__cuda_blocks(nv), GD_CUDA_THREADS, 0, stream>>>(
                cond, (const T *)x, (const T *)o, (T *)y, (uint32_t)nv, w, vec[0], vec[1],
                vec[2]);
        else
            where_vec_kernel<<<gd__cuda_blocks(nv), GD_CUDA_THREADS, 0, stream>>>(
                cond, (const T *)x, (const T *)o, (T *)y, nv, w, vec[0], vec[1], vec[2]);
    } else if (fits) {
        where_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, stream>>>(
            cond, (const T *)x, (const T *)o, (T *)y, (uint32_t)n, w);
    } else {
        where_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, stream>>>(
            cond, (const T *)x, (const T *)o, (T *)y, n, w);
    }
}

extern "C" int
gd__cuda_where(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    const uint8_t *cond = (const uint8_t *)c->in[0]->data;
    const void *x = c->in[1]->data, *o = c->in[2]->data;
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    w.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        w.shape[d] = y->shape[d];
    for (int k = 0; k < 3; k++)
        gd__cuda_bcast_strides(c->in[k], y, w.stride[k]);
    gd__cuda_walk_coalesce(&w, 3);
    switch (gd_dtype_size(y->dtype)) {
    case 1:
        where_launch<uint8_t>(cond, x, o, y->data, n, w, ctx->compute);
        break;
    case 2:
        where_launch<uint16_t>(cond, x, o, y->data, n, w, ctx->compute);
        break;
    case 4:
        where_launch<uint32_t>(cond, x, o, y->data, n, w, ctx->compute);
        break;
    default:
        where_launch<uint64_t>(cond, x, o, y->data, n, w, ctx->compute);
        break;
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- Cast, CastLike ---- */

/*
 * One element of a cast, as engine/cpu/op_logic.c does it: float values are float32 here
 * (the compute dtype), widened exactly to double for the rounding rules; a float target is
 * stored as float32. The double arithmetic of the rules is exact, so the bits are the CPU's.
 */
static __global__ void
cast_kernel(const void *x, enum gd_dtype from, void *y, enum gd_dtype ystore, enum gd_dtype to,
            int64_t n)
{
    int from_float = from == GD_F32, to_float = ystore == GD_F32;
    int uns = gd__dtype_unsigned(from);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        if (from_float && to_float) {
            ((float *)y)[i] = (float)gd__cast_float_value((double)((const float *)x)[i], to);
        } else if (from_float) {
            gd__int_store(ystore, y, i, gd__float_to_int((double)((const float *)x)[i], to));
        } else if (to_float) {
            int64_t v = gd__int_load(from, x, i);
            if (to == GD_F16 || to == GD_BF16)
                ((float *)y)[i] = (float)gd__cast_float_value(gd__int_to_double_odd(v, uns), to);
            else
                ((float *)y)[i] = gd__int_to_float(v, uns);
        } else {
            gd__int_store(ystore, y, i, gd__int_load(from, x, i));
        }
    }
}

static int
cast_launch(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t n = gd_tensor_numel(c->out[0]);
    int rc = 0;
    if (n == 0)
        return 0;
    cast_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(
        c->in[0]->data, c->in[0]->dtype, c->out[0]->data, c->out[0]->dtype, c->params->cast_to, n);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_cast(struct gd_op_call *c, struct gd_err *err)
{
    return cast_launch(c, err);
}

extern "C" int
gd__cuda_cast_like(struct gd_op_call *c, struct gd_err *err)
{
    return cast_launch(c, err);
}
