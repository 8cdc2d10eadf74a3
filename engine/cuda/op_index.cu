/*
 * op_index.cu: indexing ops on the GPU: Gather, GatherElements, GatherND, ScatterElements
 * (Scatter), ScatterND, Trilu, OneHot, EyeLike, TopK. They mirror engine/cpu/op_index.c
 * and give its bits (docs/CUDA_KERNELS.md):
 *
 * - the gathers, Trilu, OneHot and EyeLike move elements by their size, any dtype;
 * - a scatter runs one thread per output element, which takes the data value and applies,
 *   in the C order of the indices, every update aimed at it: the CPU's sequential order for
 *   that element, so add and mul round the same sums and products, and with reduction none
 *   the last update wins as on the CPU. No atomics;
 * - TopK selects per row, one block per row, k rounds each picking the best element after
 *   the previous pick in the CPU's total order (value, NaN above every number, ties to the
 *   lower index): the same values and indices.
 *
 * Computed indices are checked first (index.cuh).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.cuh"

/* ---- the run-time index check ---- */

static __global__ void
check_kernel(const void *idx, int is32, int64_t n, gd__cuda_index_rule r, int *bad)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t v = gd__cuda_index_at(idx, is32, i);
        int k = r.period > 1 ? (int)(i % r.period) : 0;
        if ((v < r.lo[k] || v >= r.hi[k]) && !(r.has_special && v == r.special))
            *bad = 1; /* every writer writes the same value */
    }
}

extern "C" int
gd__cuda_check_indices(const struct gd_op_call *c, int slot, const gd__cuda_index_rule *rule,
                       const char *what, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *t = c->in[slot];
    int64_t n = gd_tensor_numel(t);
    int is32 = t->dtype == GD_I32, bad = 0, rc = 0;
    int *flag = NULL;
    void *host = NULL;
    if (n == 0 || c->graph->values[c->node->inputs[slot]].constant != NULL)
        return 0;
    rc = gd__cuda_scratch(ctx, sizeof *flag, (void **)&flag, err);
    if (rc != 0)
        return rc;
    GD_CUDA_TRY(cudaMemsetAsync(flag, 0, sizeof *flag, ctx->compute));
    check_kernel<<<gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute>>>(t->data, is32, n,
                                                                           *rule, flag);
    GD_CUDA_CHECK_LAUNCH();
    GD_CUDA_TRY(cudaMemcpyAsync(&bad, flag, sizeof bad, cudaMemcpyDeviceToHost, ctx->compute));
    GD_CUDA_TRY(cudaStreamSynchronize(ctx->compute));
    if (!bad)
        goto done;
    /* The error path: find the first bad value on the host, for the message. */
    host = malloc(gd_tensor_nbytes(t));
    if (host == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for the indices");
        goto done;
    }
    GD_CUDA_TRY(cudaMemcpy(host, t->data, gd_tensor_nbytes(t), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; i++) {
        int64_t v = is32 ? ((const int32_t *)host)[i] : ((const int64_t *)host)[i];
        int k = rule->period > 1 ? (int)(i % rule->period) : 0;
        if ((v >= rule->lo[k] && v < rule->hi[k]) || (rule->has_special && v == rule->special))
            continue;
        if (strcmp(what, "target") == 0)
            rc = gd_err_set(err, GD_ERANGE, "target %lld (element %lld) is not a class of "
                            "%lld%s", (long long)v, (long long)i, (long long)rule->hi[k],
                            rule->has_special ? " nor the ignore_index" : "");
        else
            rc = gd_err_set(err, GD_ERANGE, "index %lld (element %lld of the indices) is out of "
                            "range for an axis of %lld", (long long)v, (long long)i,
                            (long long)rule->hi[k]);
        break;
    }
    if (rc == 0) /* the flag saw what the host cannot find: a device fault */
        rc = gd_err_set(err, GD_EDEVICE, "the index check failed on the device only");
done:
    free(host);
    gd__cuda_scratch_free(ctx, flag);
    return rc;
}

/* ---- shapes passed to kernels ---- */

struct shape8 {
    int ndim;
    int64_t dim[GD_MAX_DIMS];
    int64_t stride[GD_MAX_DIMS]; /* C-order element strides */
};

static shape8
shape8_of(const struct gd_tensor *t)
{
    shape8 s = {};
    s.ndim = t->ndim;
    int64_t st = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        s.dim[i] = t->shape[i];
        s.stride[i] = st;
        st *= t->shape[i];
    }
    return s;
}

/* Sizes before, at and after axis. */
static void
split_at(const struct gd_tensor *t, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < axis)
            *outer *= t->shape[i];
        else if (i > axis)
            *inner *= t->shape[i];
    }
    *len = t->shape[axis];
}

/* Launches kernel K<U> for the element size es (1, 2, 4, 8); GD_EDTYPE otherwise. */
#define BY_SIZE(es, LAUNCH)                                                                    \
    switch (es) {                                                                              \
    case 1:                                                                                    \
        LAUNCH(uint8_t);                                                                       \
        break;                                                                                 \
    case 2:                                                                                    \
        LAUNCH(uint16_t);                                                                      \
        break;                                                                                 \
    case 4:                                                                                    \
        LAUNCH(uint32_t);                                                                      \
        break;                                                                                 \
    case 8:                                                                                    \
        LAUNCH(uint64_t);                                                                      \
        break;                                                                                 \
    default:                                                                                   \
        return gd_err_set(err, GD_EDTYPE, "%s of %zu-byte elements", gd_op_name(c->node->op),  \
                          (size_t)(es));                                                       \
    }

#define GRID(n) gd__cuda_blocks(n), GD_CUDA_THREADS, 0, ctx->compute
#define STRIDE_LOOP(i, n)                                                                      \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, step_ =                   \
             (int64_t)gridDim.x * blockDim.x;                                                  \
         i < (n); i += step_)

/* ---- Gather ---- */

template <class U>
static __global__ void
gather_kernel(const U *x, const void *idx, int is32, U *y, int64_t n, int64_t n_idx,
              int64_t len, int64_t inner)
{
    STRIDE_LOOP(i, n)
    {
        int64_t r = i % inner, j = (i / inner) % n_idx, o = i / inner / n_idx;
        int64_t v = gd__index_fix(gd__cuda_index_at(idx, is32, j), len);
        y[i] = v >= 0 ? x[(o * len + v) * inner + r] : U();
    }
}

extern "C" int
gd__cuda_gather(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    struct gd_tensor *y = c->out[0];
    int64_t outer, len, inner, n = gd_tensor_numel(y), n_idx = gd_tensor_numel(idx);
    split_at(x, c->params->axis, &outer, &len, &inner);
    gd__cuda_index_rule rule = gd__cuda_index_rule_axes(&len, 1);
    int rc = gd__cuda_check_indices(c, 1, &rule, "index", err);
    if (rc != 0 || n == 0)
        return rc;
    int is32 = idx->dtype == GD_I32;
#define LAUNCH(U)                                                                              \
    gather_kernel<U><<<GRID(n)>>>((const U *)x->data, idx->data, is32, (U *)y->data, n, n_idx, \
                                  len, inner)
    BY_SIZE(gd_dtype_size(x->dtype), LAUNCH);
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- GatherElements ---- */

template <class U>
static __global__ void
gather_elements_kernel(const U *x, shape8 xs, const void *idx, int is32, shape8 is, int axis,
                       U *y, int64_t n)
{
    STRIDE_LOOP(i, n)
    {
        int64_t off = 0, rest = i;
        bool ok = true;
        for (int d = is.ndim - 1; d >= 0; d--) {
            int64_t p = rest % is.dim[d];
            rest /= is.dim[d];
            if (d == axis) {
                p = gd__index_fix(gd__cuda_index_at(idx, is32, i), xs.dim[d]);
                ok = ok && p >= 0;
            }
            off += p * xs.stride[d];
        }
        y[i] = ok ? x[off] : U();
    }
}

extern "C" int
gd__cuda_gather_elements(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    struct gd_tensor *y = c->out[0];
    int axis = (int)c->params->axis;
    int64_t n = gd_tensor_numel(y), len = x->shape[axis];
    gd__cuda_index_rule rule = gd__cuda_index_rule_axes(&len, 1);
    int rc = gd__cuda_check_indices(c, 1, &rule, "index", err);
    if (rc != 0 || n == 0)
        return rc;
    shape8 xs = shape8_of(x), is = shape8_of(idx);
    int is32 = idx->dtype == GD_I32;
#define LAUNCH(U)                                                                              \
    gather_elements_kernel<U><<<GRID(n)>>>((const U *)x->data, xs, idx->data, is32, is, axis,  \
                                           (U *)y->data, n)
    BY_SIZE(gd_dtype_size(x->dtype), LAUNCH);
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- GatherND ---- */

/* Where each index tuple starts in the data: tuple t of k components, batch t / per_batch. */
static __global__ void
tuple_offsets_kernel(const void *idx, int is32, int64_t tuples, int k, shape8 xs, int b,
                     int64_t per_batch, int64_t batch_stride, int64_t unit, int64_t *out)
{
    STRIDE_LOOP(t, tuples)
    {
        int64_t off = per_batch > 0 ? t / per_batch * batch_stride : 0;
        bool ok = true;
        for (int j = 0; j < k; j++) {
            int64_t v = gd__index_fix(gd__cuda_index_at(idx, is32, t * k + j), xs.dim[b + j]);
            ok = ok && v >= 0;
            off += v * xs.stride[b + j];
        }
        out[t] = ok ? off / unit : -1;
    }
}

/* Fills tuple offsets (in units of `unit` elements) into a new scratch buffer. */
static int
tuple_offsets(struct gd__cuda_ctx *ctx, const struct gd_tensor *x, const struct gd_tensor *idx,
              int b, int64_t unit, int64_t **out, struct gd_err *err)
{
    int64_t k = idx->shape[idx->ndim - 1], tuples = gd_tensor_numel(idx) / k, batches = 1;
    for (int i = 0; i < b; i++)
        batches *= x->shape[i];
    shape8 xs = shape8_of(x);
    int64_t per_batch = batches > 0 ? tuples / batches : 0;
    int64_t batch_stride = b > 0 ? xs.stride[b - 1] : 0;
    int rc = gd__cuda_scratch(ctx, (size_t)(tuples > 0 ? tuples : 1) * sizeof(int64_t),
                              (void **)out, err);
    if (rc != 0 || tuples == 0)
        return rc;
    tuple_offsets_kernel<<<GRID(tuples)>>>(idx->data, idx->dtype == GD_I32, tuples, (int)k, xs, b,
                                           per_batch, batch_stride, unit, *out);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

template <class U>
static __global__ void
gather_nd_kernel(const U *x, const int64_t *offsets, int64_t slice, U *y, int64_t n)
{
    STRIDE_LOOP(i, n)
    {
        int64_t off = offsets[i / slice];
        y[i] = off >= 0 ? x[off * slice + i % slice] : U();
    }
}

/* Period-k bounds of GatherND's and ScatterND's tuple components: dims[0 .. k). */
static gd__cuda_index_rule
tuple_rule(const int64_t *dims, int64_t k)
{
    return gd__cuda_index_rule_axes(dims, (int)k);
}

extern "C" int
gd__cuda_gather_nd(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0], *idx = c->in[1];
    struct gd_tensor *y = c->out[0];
    int b = (int)c->params->batch_dims;
    int64_t k = idx->shape[idx->ndim - 1], n = gd_tensor_numel(y), slice = 1;
    int64_t *offsets = NULL;
    for (int i = b + (int)k; i < x->ndim; i++)
        slice *= x->shape[i];
    gd__cuda_index_rule rule = tuple_rule(&x->shape[b], k);
    int rc = gd__cuda_check_indices(c, 1, &rule, "index", err);
    if (rc != 0 || n == 0)
        return rc;
    /* Every tuple starts at a multiple of the slice (the axes it indexes are outer). */
    rc = tuple_offsets(ctx, x, idx, b, slice, &offsets, err);
    if (rc != 0)
        goto done;
#define LAUNCH(U)                                                                              \
    gather_nd_kernel<U><<<GRID(n)>>>((const U *)x->data, offsets, slice, (U *)y->data, n)
    switch (gd_dtype_size(x->dtype)) {
    case 1:
        LAUNCH(uint8_t);
        break;
    case 2:
        LAUNCH(uint16_t);
        break;
    case 4:
        LAUNCH(uint32_t);
        break;
    case 8:
        LAUNCH(uint64_t);
        break;
    default:
        rc = gd_err_set(err, GD_EDTYPE, "GatherND of %s", gd_dtype_name(x->dtype));
        goto done;
    }
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    gd__cuda_scratch_free(ctx, offsets);
    return rc;
}

/* ---- scatters ---- */

template <class T>
static __device__ __forceinline__ bool
is_nan(T v)
{
    return false;
}

template <>
__device__ __forceinline__ bool
is_nan<float>(float v)
{
    return isnan(v);
}

template <class T>
static __device__ __forceinline__ T
add_rn(T a, T b)
{
    return a + b;
}

template <>
__device__ __forceinline__ float
add_rn<float>(float a, float b)
{
    return __fadd_rn(a, b);
}

template <class T>
static __device__ __forceinline__ T
mul_rn(T a, T b)
{
    return a * b;
}

template <>
__device__ __forceinline__ float
mul_rn<float>(float a, float b)
{
    return __fmul_rn(a, b);
}

/* The CPU's scatter_apply: none takes u; max and min keep a NaN there and take a NaN u. */
template <class T>
static __device__ __forceinline__ T
scatter_apply(T y, T u, enum gd_scatter_reduction r)
{
    switch (r) {
    case GD_SCATTER_NONE:
        return u;
    case GD_SCATTER_ADD:
        return add_rn(y, u);
    case GD_SCATTER_MUL:
        return mul_rn(y, u);
    case GD_SCATTER_MAX:
        return !is_nan(y) && (is_nan(u) || u > y) ? u : y;
    case GD_SCATTER_MIN:
        return !is_nan(y) && (is_nan(u) || u < y) ? u : y;
    }
    return y;
}

/* One thread per output element: the data value, then the updates of the indices' positions
 * that share its other coordinates and point at it, along the axis in order. */
template <class T>
static __global__ void
scatter_elements_kernel(const T *x, shape8 xs, const void *idx, int is32, shape8 is,
                        const T *upd, int axis, enum gd_scatter_reduction r, T *y, int64_t n)
{
    STRIDE_LOOP(i, n)
    {
        int64_t rest = i, base = 0, pos_axis = 0;
        bool inside = true;
        for (int d = xs.ndim - 1; d >= 0; d--) {
            int64_t p = rest % xs.dim[d];
            rest /= xs.dim[d];
            if (d == axis)
                pos_axis = p;
            else if (p >= is.dim[d])
                inside = false;
            else
                base += p * is.stride[d];
        }
        T v = x[i];
        for (int64_t a = 0; inside && a < is.dim[axis]; a++) {
            int64_t at = base + a * is.stride[axis];
            if (gd__index_fix(gd__cuda_index_at(idx, is32, at), xs.dim[axis]) == pos_axis)
                v = scatter_apply(v, upd[at], r);
        }
        y[i] = v;
    }
}

static int
scatter_elements(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct gd_tensor *y = c->out[0];
    enum gd_scatter_reduction r = c->params->scatter_reduction;
    int axis = (int)c->params->axis;
    int64_t n = gd_tensor_numel(y), len = x->shape[axis];
    gd__cuda_index_rule rule = gd__cuda_index_rule_axes(&len, 1);
    int rc = gd__cuda_check_indices(c, 1, &rule, "index", err);
    if (rc != 0 || n == 0)
        return rc;
    shape8 xs = shape8_of(x), is = shape8_of(idx);
    int is32 = idx->dtype == GD_I32;
#define LAUNCH(T)                                                                              \
    scatter_elements_kernel<T><<<GRID(n)>>>((const T *)x->data, xs, idx->data, is32, is,       \
                                            (const T *)upd->data, axis, r, (T *)y->data, n)
    if (r == GD_SCATTER_NONE) {
        BY_SIZE(gd_dtype_size(x->dtype), LAUNCH);
    } else if (x->dtype == GD_F32) {
        LAUNCH(float);
    } else if (x->dtype == GD_I32) {
        LAUNCH(int32_t);
    } else if (x->dtype == GD_I64) {
        LAUNCH(int64_t);
    } else {
        return gd_err_set(err, GD_EDTYPE, "%s with a reduction of %s data",
                          gd_op_name(c->node->op), gd_dtype_name(x->dtype));
    }
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

extern "C" int
gd__cuda_scatter_elements(struct gd_op_call *c, struct gd_err *err)
{
    return scatter_elements(c, err);
}

extern "C" int
gd__cuda_scatter(struct gd_op_call *c, struct gd_err *err)
{
    return scatter_elements(c, err);
}

/* One thread per output element: the data value, then the slice element s of every tuple
 * that targets its slice, tuples in order. */
template <class T>
static __global__ void
scatter_nd_kernel(const T *x, const int64_t *targets, int64_t tuples, int64_t slice,
                  const T *upd, enum gd_scatter_reduction r, T *y, int64_t n)
{
    STRIDE_LOOP(i, n)
    {
        int64_t q = i / slice, s = i % slice;
        T v = x[i];
        for (int64_t t = 0; t < tuples; t++)
            if (targets[t] == q)
                v = scatter_apply(v, upd[t * slice + s], r);
        y[i] = v;
    }
}

extern "C" int
gd__cuda_scatter_nd(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct gd_tensor *y = c->out[0];
    enum gd_scatter_reduction r = c->params->scatter_reduction;
    int64_t k = idx->shape[idx->ndim - 1], n = gd_tensor_numel(y), slice = 1;
    int64_t tuples = gd_tensor_numel(idx) / k, *targets = NULL;
    for (int i = (int)k; i < x->ndim; i++)
        slice *= x->shape[i];
    gd__cuda_index_rule rule = tuple_rule(x->shape, k);
    int rc = gd__cuda_check_indices(c, 1, &rule, "index", err);
    if (rc != 0 || n == 0)
        return rc;
    rc = tuple_offsets(ctx, x, idx, 0, slice, &targets, err);
    if (rc != 0)
        goto done;
#define LAUNCH(T)                                                                              \
    scatter_nd_kernel<T><<<GRID(n)>>>((const T *)x->data, targets, tuples, slice,              \
                                      (const T *)upd->data, r, (T *)y->data, n)
    if (r == GD_SCATTER_NONE && gd_dtype_size(x->dtype) == 1) {
        LAUNCH(uint8_t);
    } else if (r == GD_SCATTER_NONE && gd_dtype_size(x->dtype) == 2) {
        LAUNCH(uint16_t);
    } else if (r == GD_SCATTER_NONE && gd_dtype_size(x->dtype) == 4) {
        LAUNCH(uint32_t);
    } else if (r == GD_SCATTER_NONE && gd_dtype_size(x->dtype) == 8) {
        LAUNCH(uint64_t);
    } else if (r != GD_SCATTER_NONE && x->dtype == GD_F32) {
        LAUNCH(float);
    } else if (r != GD_SCATTER_NONE && x->dtype == GD_I32) {
        LAUNCH(int32_t);
    } else if (r != GD_SCATTER_NONE && x->dtype == GD_I64) {
        LAUNCH(int64_t);
    } else {
        rc = gd_err_set(err, GD_EDTYPE, "ScatterND of %s data", gd_dtype_name(x->dtype));
        goto done;
    }
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    gd__cuda_scratch_free(ctx, targets);
    return rc;
}

/* ---- Trilu, OneHot, EyeLike ---- */

template <class U>
static __global__ void
trilu_kernel(const U *x, U *y, int64_t n, int64_t rows, int64_t cols, int64_t k,
             const int64_t *k_device, int upper)
{
    int64_t kk = k_device != NULL ? *k_device : k;
    STRIDE_LOOP(i, n)
    {
        int64_t col = i % cols, row = (i / cols) % rows;
        y[i] = gd__trilu_keeps(row, col, kk, upper) ? x[i] : U();
    }
}

extern "C" int
gd__cuda_trilu(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    int64_t n = gd_tensor_numel(x), rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    const int64_t *k_device = p->diagonal_runtime ? (const int64_t *)c->in[1]->data : NULL;
    int rc = 0;
    if (n == 0)
        return 0;
#define LAUNCH(U)                                                                              \
    trilu_kernel<U><<<GRID(n)>>>((const U *)x->data, (U *)c->out[0]->data, n, rows, cols,      \
                                 p->diagonal, k_device, p->upper)
    BY_SIZE(gd_dtype_size(x->dtype), LAUNCH);
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* Element i of a numeric tensor of dtype d (the cuda backend's: floats are float32). */
static __device__ __forceinline__ double
load_number(const void *p, enum gd_dtype d, int64_t i)
{
    switch (d) {
    case GD_F32:
        return ((const float *)p)[i];
    case GD_F64:
        return ((const double *)p)[i];
    case GD_I8:
        return ((const int8_t *)p)[i];
    case GD_I16:
        return ((const int16_t *)p)[i];
    case GD_I32:
        return ((const int32_t *)p)[i];
    case GD_I64:
        return (double)((const int64_t *)p)[i];
    case GD_U8:
        return ((const uint8_t *)p)[i];
    case GD_U16:
        return ((const uint16_t *)p)[i];
    case GD_U32:
        return ((const uint32_t *)p)[i];
    case GD_U64:
        return (double)((const uint64_t *)p)[i];
    default:
        return NAN;
    }
}

template <class U>
static __global__ void
one_hot_kernel(const void *idx, enum gd_dtype idx_dtype, const U *values, U *y, int64_t n,
               int64_t depth, int64_t inner)
{
    STRIDE_LOOP(i, n)
    {
        int64_t r = i % inner, d = (i / inner) % depth, o = i / inner / depth;
        /* the CPU's rule: truncate, count a negative index from the end, match exactly */
        double v = trunc(load_number(idx, idx_dtype, o * inner + r));
        if (v < 0)
            v += (double)depth;
        y[i] = (double)d == v ? values[1] : values[0];
    }
}

extern "C" int
gd__cuda_one_hot(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *idx = c->in[0], *values = c->in[2];
    struct gd_tensor *y = c->out[0];
    int64_t axis = c->params->axis, depth = y->shape[axis], inner = 1, n = gd_tensor_numel(y);
    int rc = 0;
    for (int i = (int)axis; i < idx->ndim; i++)
        inner *= idx->shape[i];
    if (n == 0)
        return 0;
#define LAUNCH(U)                                                                              \
    one_hot_kernel<U><<<GRID(n)>>>(idx->data, idx->dtype, (const U *)values->data,             \
                                   (U *)y->data, n, depth, inner)
    BY_SIZE(gd_dtype_size(values->dtype), LAUNCH);
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

template <class U>
static __global__ void
eye_kernel(U *y, int64_t n, int64_t cols, int64_t k, U one)
{
    STRIDE_LOOP(i, n)
    {
        int64_t r = i / cols, col = i % cols;
        y[i] = col - r == k ? one : U();
    }
}

template <class U>
static void
eye_launch(struct gd__cuda_ctx *ctx, struct gd_tensor *y, int64_t n, int64_t k)
{
    unsigned char one[8];
    U v;
    gd__scalar_bytes(y->dtype, 1.0, one);
    memcpy(&v, one, sizeof v);
    eye_kernel<U><<<GRID(n)>>>((U *)y->data, n, y->shape[1], k, v);
}

extern "C" int
gd__cuda_eye_like(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    struct gd_tensor *y = c->out[0];
    int64_t n = gd_tensor_numel(y);
    int rc = 0;
    if (n == 0)
        return 0;
#define LAUNCH(U) eye_launch<U>(ctx, y, n, c->params->diagonal)
    BY_SIZE(gd_dtype_size(y->dtype), LAUNCH);
#undef LAUNCH
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- TopK ---- */

/* Whether (va, ia) comes before (vb, ib): the CPU's comparators. */
static __device__ __forceinline__ bool
topk_before(float va, int64_t ia, float vb, int64_t ib, int largest)
{
    bool an = isnan(va), bn = isnan(vb);
    if (an != bn)
        return largest ? an : bn;
    if (!an && va != vb)
        return largest ? va > vb : va < vb;
    return ia < ib;
}

#define TOPK_THREADS 256

/* One block per row (outer x inner rows of len along the axis): k rounds, each the best
 * element after the previous pick, reduced by a tree; the order is total, so the pick is
 * the same whatever the tree. */
static __global__ void
topk_kernel(const float *x, float *vals, int64_t *inds, int64_t len, int64_t inner, int64_t k,
            int largest)
{
    __shared__ float best_v[TOPK_THREADS];
    __shared__ int64_t best_i[TOPK_THREADS];
    __shared__ float prev_v;
    __shared__ int64_t prev_i;
    int64_t row = blockIdx.x, o = row / inner, r = row % inner;
    const float *xr = x + o * len * inner + r;
    int tid = threadIdx.x;
    for (int64_t j = 0; j < k; j++) {
        float bv = 0;
        int64_t bi = -1;
        for (int64_t a = tid; a < len; a += blockDim.x) {
            float v = xr[a * inner];
            if (j > 0 && !topk_before(prev_v, prev_i, v, a, largest))
                continue;
            if (bi < 0 || topk_before(v, a, bv, bi, largest)) {
                bv = v;
                bi = a;
            }
        }
        best_v[tid] = bv;
        best_i[tid] = bi;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s /= 2) {
            if (tid < s) {
                int64_t oi = best_i[tid + s];
                if (oi >= 0 && (best_i[tid] < 0 ||
                                topk_before(best_v[tid + s], oi, best_v[tid], best_i[tid],
                                            largest))) {
                    best_v[tid] = best_v[tid + s];
                    best_i[tid] = oi;
                }
            }
            __syncthreads();
        }
        if (tid == 0) {
            prev_v = best_v[0];
            prev_i = best_i[0];
            vals[(o * k + j) * inner + r] = best_v[0];
            inds[(o * k + j) * inner + r] = best_i[0];
        }
        __syncthreads();
    }
}

extern "C" int
gd__cuda_topk(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t outer, len, inner, k = c->out[0]->shape[c->params->axis];
    int rc = 0;
    split_at(x, c->params->axis, &outer, &len, &inner);
    if (x->dtype != GD_F32)
        return gd_err_set(err, GD_EDTYPE, "TopK of %s on cuda", gd_dtype_name(x->dtype));
    if (k == 0 || outer * inner == 0)
        return 0;
    if (outer * inner > INT32_MAX)
        return gd_err_set(err, GD_ENOTSUP, "TopK of %lld rows on cuda (at most %d)",
                          (long long)(outer * inner), INT32_MAX);
    topk_kernel<<<(unsigned)(outer * inner), TOPK_THREADS, 0, ctx->compute>>>(
        (const float *)x->data, (float *)c->out[0]->data, (int64_t *)c->out[1]->data, len, inner,
        k, c->params->largest);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}
