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

template <class T>
static __global__ void
where_kernel(const uint8_t *cond, const T *x, const T *o, T *y, int64_t n, gd__cuda_walk w)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t off[3];
        gd__cuda_walk_offsets(w, i, 3, off);
        y[i] = cond[off[0]] ? x[off[1]] : o[off[2]];
    }
}

extern "C" int
gd__cuda_where(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    unsigned blocks = gd__cuda_blocks(n);
    const uint8_t *cond = (const uint8_t *)c->in[0]->data;
    gd__cuda_walk w;
    int rc = 0;
    if (n == 0)
        return 0;
    w.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        w.shape[d] = y->shape[d];
    for (int k = 0; k < 3; k++)
        gd__cuda_bcast_strides(c->in[k], y, w.stride[k]);
    switch (gd_dtype_size(y->dtype)) {
    case 1:
        where_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(
            cond, (const uint8_t *)c->in[1]->data, (const uint8_t *)c->in[2]->data,
            (uint8_t *)y->data, n, w);
        break;
    case 2:
        where_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(
            cond, (const uint16_t *)c->in[1]->data, (const uint16_t *)c->in[2]->data,
            (uint16_t *)y->data, n, w);
        break;
    case 4:
        where_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(
            cond, (const uint32_t *)c->in[1]->data, (const uint32_t *)c->in[2]->data,
            (uint32_t *)y->data, n, w);
        break;
    default:
        where_kernel<<<blocks, GD_CUDA_THREADS, 0, ctx->compute>>>(
            cond, (const uint64_t *)c->in[1]->data, (const uint64_t *)c->in[2]->data,
            (uint64_t *)y->data, n, w);
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
