/* op_reduce.cu: reductions on the GPU: Softmax and LogSoftmax through cuDNN; the Reduce* ops,
 * ArgMax, ArgMin, Hardmax and CumSum with gpudiff's own deterministic kernels (no atomics). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/elt_rules.h"
#include "half.cuh"
#include "kernels.cuh"

/* Splits a shape around one axis: outer x len x inner. */
static void
split_axis(const struct gd_tensor *t, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner)
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

/* ---- Softmax, LogSoftmax: cuDNN ---- */

/*
 * Rows whose maximum is not finite: the CPU's max-shifted form (docs/NUMERICS.md) gives NaN
 * for the whole row, as PyTorch's softmax and log_softmax do: a row of -inf only (a fully
 * masked attention row: x - max is -inf - -inf), a row holding +inf (inf - inf) or NaN.
 * cuDNN gives 0 for the first, so after it each row is scanned once and written NaN where
 * it is one of these; the other rows keep cuDNN's values. One warp per (outer, inner)
 * position, its lanes striding the axis.
 */
static __global__ void
softmax_nonfinite(const float *__restrict__ x, float *__restrict__ y, int64_t len, int64_t inner,
                  int64_t positions)
{
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t p = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; p < positions;
         p += warps) {
        int64_t base = (p / inner) * len * inner + p % inner;
        int bad = 0, all_neg_inf = 1;
        for (int64_t j = lane; j < len; j += 32) {
            float v = x[base + j * inner];
            bad |= isnan(v) || v == INFINITY;
            all_neg_inf &= v == -INFINITY;
        }
        bad = __any_sync(0xffffffffu, bad) || __all_sync(0xffffffffu, all_neg_inf);
        if (bad)
            for (int64_t j = lane; j < len; j += 32)
                y[base + j * inner] = NAN;
    }
}

/*
 * The axis becomes cuDNN's channel dimension of an NCHW tensor (outer, len, inner, 1), and
 * CUDNN_SOFTMAX_MODE_CHANNEL normalizes over it at every (n, h). ACCURATE subtracts the
 * maximum first, as the CPU does; LOG gives (x - max) - log(sum). The legacy descriptor takes
 * int dimensions and strides, so tensors past INT_MAX elements are refused rather than
 * truncated. The descriptor lives for one call: it is host-side and cheap to make.
 */
static int
softmax_cudnn(struct gd_op_call *c, cudnnSoftmaxAlgorithm_t algo, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    cudnnTensorDescriptor_t desc = NULL;
    const float one = 1.f, zero = 0.f;
    int64_t outer, len, inner;
    int rc = 0;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    if (outer * len * inner == 0)
        return 0;
    if (outer * len * inner > INT_MAX)
        return gd_err_set(err, GD_ENOTSUP,
                          "softmax over %lld elements: cuDNN's tensor "
                          "descriptors take at most %d",
                          (long long)(outer * len * inner), INT_MAX);
    snprintf(c->algo, sizeof c->algo, "cudnn softmax %s",
             algo == CUDNN_SOFTMAX_LOG ? "log" : "accurate");
    GD_CUDA_TRY(cudnnCreateTensorDescriptor(&desc));
    GD_CUDA_TRY(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)outer,
                                           (int)len, (int)inner, 1));
    GD_CUDA_TRY(cudnnSoftmaxForward(ctx->cudnn, algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc,
                                    c->in[0]->data, &zero, desc, c->out[0]->data));
    {
        /* one warp per (outer, inner) position, 8 per block */
        int64_t pos = outer * inner, blocks = (pos + 7) / 8;
        softmax_nonfinite<<<(unsigned)(blocks < 65535LL * 8 ? blocks : 65535LL * 8), 256, 0,
                            ctx->compute>>>((const float *)c->in[0]->data,
                                            (float *)c->out[0]->data, len, inner, pos);
        GD_CUDA_CHECK_LAUNCH();
    }
done:
    if (desc != NULL)
        cudnnDestroyTensorDescriptor(desc);
    return rc;
}

/* ---- Softmax, LogSoftmax of float16 and bfloat16: one warp per row ---- */

/* The CPU loop's step of the maximum so far m with x: a NaN x or a greater one replaces it
 * (so a NaN stays). */
static __device__ __forceinline__ float
max_nan(float m, float x)
{
    return x > m || isnan(x) ? x : m;
}

/*
 * Softmax (log_form 0) or LogSoftmax (1) along the last axis of rows of `len` elements of T,
 * computed in float32 as the CPU's loop states it (engine/cpu/op_reduce.c): m the maximum
 * (a NaN wins), s the sum of expf(x - m), y = expf(x - m) / s or (x - m) - logf(s), rounded
 * once to T. A row whose maximum is not finite gives NaN throughout, as on the CPU (x - m is
 * NaN for x = m = +-inf). One warp per row: lane l takes elements l, l + 32, ... (in
 * 16-byte vectors of consecutive elements where vec says the rows allow: vector l, l + 32,
 * ...), adding its terms in that order; the lanes' partials are then added by a butterfly
 * of shuffles, which gives every lane the same sum. The order depends on len alone, so
 * every run gives the same bits; against the CPU's sequential sum it is reassociation.
 */
template <class T>
static __global__ void
softmax_rows_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t rows, int64_t len,
                    int vec, int log_form)
{
    const int V = GD_VEC16_LEN(T);
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += warps) {
        const T *xr = x + r * len;
        T *yr = y + r * len;
        int64_t nv = vec ? len / V : 0;
        const gd__vec16<T> *xv = (const gd__vec16<T> *)xr;
        float m = -INFINITY;
        for (int64_t i = lane; i < nv; i += 32) {
            gd__vec16<T> u = xv[i];
#pragma unroll
            for (int k = 0; k < V; k++)
                m = max_nan(m, gd__ld(u.e, k));
        }
        for (int64_t j = nv * V + lane; j < len; j += 32)
            m = max_nan(m, gd__ld(xr, j));
        for (int d = 16; d > 0; d >>= 1)
            m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, d));
        m = __shfl_sync(0xffffffffu, m, 0); /* one m for the row, whatever a -0/+0 tie kept */
        float s = 0.f;
        for (int64_t i = lane; i < nv; i += 32) {
            gd__vec16<T> u = xv[i];
#pragma unroll
            for (int k = 0; k < V; k++)
                s = __fadd_rn(s, expf(__fsub_rn(gd__ld(u.e, k), m)));
        }
        for (int64_t j = nv * V + lane; j < len; j += 32)
            s = __fadd_rn(s, expf(__fsub_rn(gd__ld(xr, j), m)));
        for (int d = 16; d > 0; d >>= 1)
            s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, d));
        s = __shfl_sync(0xffffffffu, s, 0);
        float ls = log_form ? logf(s) : 0.f;
        gd__vec16<T> *yv = (gd__vec16<T> *)yr;
        for (int64_t i = lane; i < nv; i += 32) {
            gd__vec16<T> u = xv[i], o;
#pragma unroll
            for (int k = 0; k < V; k++) {
                float dk = __fsub_rn(gd__ld(u.e, k), m);
                gd__st(o.e, k, log_form ? __fsub_rn(dk, ls) : __fdiv_rn(expf(dk), s));
            }
            yv[i] = o;
        }
        for (int64_t j = nv * V + lane; j < len; j += 32) {
            float dj = __fsub_rn(gd__ld(xr, j), m);
            gd__st(yr, j, log_form ? __fsub_rn(dj, ls) : __fdiv_rn(expf(dj), s));
        }
    }
}

template <class T>
static int
softmax_rows(struct gd_op_call *c, int64_t rows, int64_t len, int log_form, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const T *x = (const T *)c->in[0]->data;
    T *y = (T *)c->out[0]->data;
    int rc = 0;
    int vec = (len * (int64_t)sizeof(T)) % 16 == 0 && (uintptr_t)x % 16 == 0 &&
              (uintptr_t)y % 16 == 0;
    int64_t blocks = (rows + 7) / 8; /* 8 warps, 8 rows, per block */
    snprintf(c->algo, sizeof c->algo, "gpudiff warp rows%s", log_form ? " log" : "");
    softmax_rows_kernel<<<(unsigned)(blocks < 65535LL * 8 ? blocks : 65535LL * 8), 256, 0,
                          ctx->compute>>>(x, y, rows, len, vec, log_form);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * float32: cuDNN. float16 and bfloat16 along the last axis: the warp kernel above, on the
 * half values themselves; along another axis, cuDNN on float32 copies (half_call.c).
 */
static int
softmax_entry(struct gd_op_call *c, cudnnSoftmaxAlgorithm_t algo, struct gd_err *err)
{
    enum gd_dtype dt = c->in[0]->dtype;
    if (dt == GD_F32 && c->out[0]->dtype == GD_F32)
        return softmax_cudnn(c, algo, err);
    int64_t outer, len, inner;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    if ((dt != GD_F16 && dt != GD_BF16) || c->out[0]->dtype != dt || inner != 1)
        return gd__cuda_half_fallback(c, err);
    if (outer * len == 0)
        return 0;
    int log_form = algo == CUDNN_SOFTMAX_LOG;
    return dt == GD_F16 ? softmax_rows<__half>(c, outer, len, log_form, err)
                        : softmax_rows<__nv_bfloat16>(c, outer, len, log_form, err);
}

extern "C" int
gd__cuda_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_entry(c, CUDNN_SOFTMAX_ACCURATE, err);
}

extern "C" int
gd__cuda_log_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_entry(c, CUDNN_SOFTMAX_LOG, err);
}

/* ---- the Reduce* ops, ArgMax, ArgMin ---- */

/*
 * What an output reduces: the kept axes (in C order they number the outputs) and the reduced
 * axes (in C order they number an output's terms, t = 0 .. count-1), each with the input's
 * element strides. Passed by value.
 */
struct red_geom {
    int n_kept, n_red;
    int64_t kept_shape[GD_MAX_DIMS], kept_stride[GD_MAX_DIMS];
    int64_t red_shape[GD_MAX_DIMS], red_stride[GD_MAX_DIMS];
    int64_t n_out;
    int64_t count;
    int last; /* ArgMax, ArgMin select_last_index */
};

static red_geom
red_geom_of(const struct gd_tensor *x, const int *is_red, int64_t n_out, int last)
{
    red_geom g;
    int64_t stride[GD_MAX_DIMS], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= x->shape[i];
    }
    g.n_kept = 0;
    g.n_red = 0;
    g.count = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (is_red[i]) {
            g.red_shape[g.n_red] = x->shape[i];
            g.red_stride[g.n_red++] = stride[i];
            g.count *= x->shape[i];
        } else {
            g.kept_shape[g.n_kept] = x->shape[i];
            g.kept_stride[g.n_kept++] = stride[i];
        }
    }
    g.n_out = n_out;
    g.last = last;
    return g;
}

/* Element offset of index i of a C-order walk over nd axes. */
static __device__ __forceinline__ int64_t
offset_of(int64_t i, int nd, const int64_t *shape, const int64_t *stride)
{
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        off += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return off;
}

enum red_kind {
    RED_SUM,
    RED_MEAN,
    RED_MAX,
    RED_ARGMAX,
    RED_MIN,
    RED_ARGMIN,
    RED_PROD,
    RED_L1,
    RED_L2,
    RED_SUM_SQUARE,
    RED_LOG_SUM,
    RED_LOG_SUM_EXP /* float only: its own kernel, lse_kernel */
};

/* A partial result: the sum, or the chosen element's value and its term index t (-1: none
 * chosen yet, the value is the start value). */
struct red_state {
    float v;
    int64_t at;
};

template <int KIND>
static __device__ __forceinline__ red_state
red_start()
{
    red_state s;
    s.v = KIND == RED_MAX || KIND == RED_ARGMAX
              ? -INFINITY
              : (KIND == RED_MIN || KIND == RED_ARGMIN ? INFINITY : (KIND == RED_PROD ? 1.f : 0.f));
    s.at = -1;
    return s;
}

/*
 * Folds term t into s, t ascending: the CPU's loops, one IEEE operation per step (squares and
 * sums with __fmul_rn and __fadd_rn so that nvcc cannot fuse them). ReduceMax (Min) starts at
 * -inf (+inf), takes v when greater (smaller) or NaN, and stops at the first NaN. ArgMax
 * (ArgMin) starts at the first term, takes NaN or a greater (smaller) value, an equal one
 * too with select_last_index; after a NaN it takes only a later NaN, and only with
 * select_last_index (numpy's argmax of the reversed row, as the CPU computes it).
 */
template <int KIND>
static __device__ __forceinline__ void
red_step(red_state &s, float v, int64_t t, int last)
{
    if (KIND == RED_SUM || KIND == RED_MEAN || KIND == RED_LOG_SUM) {
        s.v = __fadd_rn(s.v, v);
    } else if (KIND == RED_L1) {
        s.v = __fadd_rn(s.v, fabsf(v));
    } else if (KIND == RED_L2 || KIND == RED_SUM_SQUARE) {
        s.v = __fadd_rn(s.v, __fmul_rn(v, v));
    } else if (KIND == RED_PROD) {
        s.v = __fmul_rn(s.v, v);
    } else if (KIND == RED_MAX || KIND == RED_MIN) {
        int better = KIND == RED_MAX ? v > s.v : v < s.v;
        if (!isnan(s.v) && (better || isnan(v))) {
            s.v = v;
            s.at = t;
        }
    } else {
        int better = KIND == RED_ARGMAX ? v > s.v : v < s.v;
        /* a NaN is the extremum: the first one wins, the last with select_last_index */
        if (s.at < 0 || (isnan(s.v) ? last && isnan(v)
                                    : isnan(v) || better || (last && v == s.v))) {
            s.v = v;
            s.at = t;
        }
    }
}

/*
 * Whether partial b replaces partial a when two parts of the terms meet. What the sequential
 * loops above pick over all terms is: the first NaN if there is one (the last with
 * select_last_index); else the extremum, at
 * its first term (its last for ArgMax and ArgMin with select_last_index), -0 and +0 being
 * equal. Deciding by the term indices gives exactly that whatever the grouping, so the tree
 * reproduces the CPU's bits and NaN.
 */
template <int KIND>
static __device__ __forceinline__ bool
takes_over(red_state a, red_state b, int last)
{
    if (b.at < 0)
        return false;
    if (a.at < 0)
        return true;
    if (isnan(a.v))
        return isnan(b.v) && (last ? b.at > a.at : b.at < a.at);
    if (isnan(b.v))
        return true;
    if (b.v != a.v)
        return KIND == RED_MAX || KIND == RED_ARGMAX ? b.v > a.v : b.v < a.v;
    return last ? b.at > a.at : b.at < a.at;
}

/* a holds the lower terms' partial: sums add and products multiply in a fixed order. */
template <int KIND>
static __device__ __forceinline__ red_state
red_join(red_state a, red_state b, int last)
{
    if (KIND == RED_PROD) {
        a.v = __fmul_rn(a.v, b.v);
        return a;
    }
    if (KIND != RED_MAX && KIND != RED_MIN && KIND != RED_ARGMAX && KIND != RED_ARGMIN) {
        a.v = __fadd_rn(a.v, b.v);
        return a;
    }
    return takes_over<KIND>(a, b, last) ? b : a;
}

template <int KIND, class T>
static __device__ __forceinline__ void
red_store(T *y, int64_t o, red_state s, int64_t count)
{
    if constexpr (KIND == RED_ARGMAX || KIND == RED_ARGMIN)
        y[o] = s.at;
    else if constexpr (KIND == RED_MEAN)
        y[o] = __fdiv_rn(s.v, (float)count); /* the sum divided once; 0 / 0 = NaN, no terms */
    else if constexpr (KIND == RED_L2)
        y[o] = sqrtf(s.v);
    else if constexpr (KIND == RED_LOG_SUM)
        y[o] = logf(s.v);
    else
        y[o] = s.v;
}

/* One thread per output, all its terms in order: the CPU's loop exactly. */
template <int KIND, class T>
static __global__ void
red_seq_kernel(const float *x, T *y, red_geom g)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.n_out; o += step) {
        const float *xo = x + offset_of(o, g.n_kept, g.kept_shape, g.kept_stride);
        red_state s = red_start<KIND>();
        for (int64_t t = 0; t < g.count; t++)
            red_step<KIND>(s, xo[offset_of(t, g.n_red, g.red_shape, g.red_stride)], t, g.last);
        red_store<KIND>(y, o, s, g.count);
    }
}

/* Threads per output of the tree reduction; the tree below is built on this. */
#define RED_THREADS 256

/*
 * Thread tid of a block folds terms tid, tid + 256, tid + 512, ... of output o in order and
 * the partials are joined by a shared-memory tree, partial i + s into partial i for s = 128,
 * 64, ..., 1; every thread gets the result. The grouping depends only on the shape, never on
 * timing: two runs give the same bits, and no atomics are involved.
 */
template <int KIND>
static __device__ red_state
red_block(const float *xo, const red_geom &g, float *part_v, int64_t *part_at)
{
    int tid = threadIdx.x;
    red_state s = red_start<KIND>();
    for (int64_t t = tid; t < g.count; t += RED_THREADS)
        red_step<KIND>(s, xo[offset_of(t, g.n_red, g.red_shape, g.red_stride)], t, g.last);
    part_v[tid] = s.v;
    part_at[tid] = s.at;
    __syncthreads();
    for (int half = RED_THREADS / 2; half > 0; half >>= 1) {
        if (tid < half) {
            red_state a = {part_v[tid], part_at[tid]};
            red_state b = {part_v[tid + half], part_at[tid + half]};
            a = red_join<KIND>(a, b, g.last);
            part_v[tid] = a.v;
            part_at[tid] = a.at;
        }
        __syncthreads();
    }
    red_state r = {part_v[0], part_at[0]};
    /* every thread has read the result before the partials are reused */
    __syncthreads();
    return r;
}

/* One block per output (grid-stride over outputs), red_block's tree. */
template <int KIND, class T>
static __global__ void
red_tree_kernel(const float *x, T *y, red_geom g)
{
    __shared__ float part_v[RED_THREADS];
    __shared__ int64_t part_at[RED_THREADS];
    for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
        const float *xo = x + offset_of(o, g.n_kept, g.kept_shape, g.kept_stride);
        red_state r = red_block<KIND>(xo, g, part_v, part_at);
        if (threadIdx.x == 0)
            red_store<KIND>(y, o, r, g.count);
    }
}

/*
 * ReduceLogSumExp, the max-shifted form: m = the maximum by red_block's tree (exact, as
 * ReduceMax), then s = the sum of expf(x - m) by the same tree, y = m + logf(s); a
 * non-finite m (no terms, a +inf, a NaN) is the result itself, as on the CPU.
 */
static __global__ void
lse_kernel(const float *x, float *y, red_geom g)
{
    __shared__ float part_v[RED_THREADS];
    __shared__ int64_t part_at[RED_THREADS];
    int tid = threadIdx.x;
    for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
        const float *xo = x + offset_of(o, g.n_kept, g.kept_shape, g.kept_stride);
        float m = red_block<RED_MAX>(xo, g, part_v, part_at).v;
        if (!isfinite(m)) {
            if (tid == 0)
                y[o] = m;
            continue; /* m is the same in every thread: the whole block skips */
        }
        red_state s = red_start<RED_SUM>();
        for (int64_t t = tid; t < g.count; t += RED_THREADS)
            s.v = __fadd_rn(
                s.v, expf(__fsub_rn(xo[offset_of(t, g.n_red, g.red_shape, g.red_stride)], m)));
        part_v[tid] = s.v;
        __syncthreads();
        for (int half = RED_THREADS / 2; half > 0; half >>= 1) {
            if (tid < half)
                part_v[tid] = __fadd_rn(part_v[tid], part_v[tid + half]);
            __syncthreads();
        }
        if (tid == 0)
            y[o] = __fadd_rn(m, logf(part_v[0]));
        __syncthreads();
    }
}

/*
 * The exact kinds give the same bits by either kernel, so short reductions take one thread
 * per output (no idle threads); sums and products always take the tree, so their order
 * depends on nothing but the tree's fixed shape.
 */
#define RED_SEQ_MAX_TERMS 64

template <int KIND, class T>
static int
red_launch(struct gd_op_call *c, const red_geom &g, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const float *x = (const float *)c->in[0]->data;
    T *y = (T *)c->out[0]->data;
    int exact = KIND == RED_MAX || KIND == RED_ARGMAX || KIND == RED_MIN || KIND == RED_ARGMIN;
    int seq = exact && g.count <= RED_SEQ_MAX_TERMS;
    int64_t grid = g.n_out < 65535LL * 8 ? g.n_out : 65535LL * 8;
    int rc = 0;
    if (g.n_out == 0)
        return 0;
    if (seq) {
        snprintf(c->algo, sizeof c->algo, "sequential");
        red_seq_kernel<KIND, T>
            <<<gd__cuda_blocks(g.n_out), GD_CUDA_THREADS, 0, ctx->compute>>>(x, y, g);
    } else {
        snprintf(c->algo, sizeof c->algo, "tree%d", RED_THREADS);
        if constexpr (KIND == RED_LOG_SUM_EXP)
            lse_kernel<<<(unsigned)grid, RED_THREADS, 0, ctx->compute>>>(x, (float *)y, g);
        else
            red_tree_kernel<KIND, T><<<(unsigned)grid, RED_THREADS, 0, ctx->compute>>>(x, y, g);
    }
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* ---- integer data: one thread per output, the CPU's loop through elt_rules.h ---- */

static __device__ int64_t
int_red_one(const void *x, enum gd_dtype dt, int64_t base, const red_geom &g, int kind)
{
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    if (g.count == 0 && (kind == RED_MAX || kind == RED_MIN)) {
        int64_t top =
            bits == 64 ? (uns ? -1 : INT64_MAX) : (int64_t)(((uint64_t)1 << (bits - !uns)) - 1);
        int64_t bottom = uns ? 0 : (bits == 64 ? INT64_MIN : -top - 1);
        return kind == RED_MAX ? bottom : top;
    }
    int64_t acc = kind == RED_PROD ? 1 : 0;
    for (int64_t t = 0; t < g.count; t++) {
        int64_t v = gd__int_load(dt, x, base + offset_of(t, g.n_red, g.red_shape, g.red_stride));
        switch (kind) {
        case RED_MAX:
            acc = t == 0 ? v : gd__int_binary(GD_IOP_MAX, acc, v, uns, bits);
            break;
        case RED_MIN:
            acc = t == 0 ? v : gd__int_binary(GD_IOP_MIN, acc, v, uns, bits);
            break;
        case RED_PROD:
            acc = gd__int_binary(GD_IOP_MUL, acc, v, uns, bits);
            break;
        case RED_L1:
            acc = gd__int_binary(GD_IOP_ADD, acc, gd__int_abs(v, uns), uns, bits);
            break;
        case RED_SUM_SQUARE:
            acc = gd__int_binary(GD_IOP_ADD, acc, gd__int_binary(GD_IOP_MUL, v, v, uns, bits), uns,
                                 bits);
            break;
        default:
            acc = gd__int_binary(GD_IOP_ADD, acc, v, uns, bits);
            break;
        }
    }
    return acc;
}

/* The index ArgMax (ArgMin) picks among the terms: the first extremum, the last one with
 * select_last_index. */
static __device__ int64_t
int_arg_one(const void *x, enum gd_dtype dt, int64_t base, const red_geom &g, int want_max)
{
    int uns = gd__dtype_unsigned(dt);
    int64_t best = 0, bv = gd__int_load(dt, x, base);
    for (int64_t t = 1; t < g.count; t++) {
        int64_t v = gd__int_load(dt, x, base + offset_of(t, g.n_red, g.red_shape, g.red_stride));
        if (gd__int_compare(want_max ? GD_CMP_GREATER : GD_CMP_LESS, v, bv, uns) ||
            (g.last && v == bv)) {
            bv = v;
            best = t;
        }
    }
    return best;
}

static __global__ void
int_red_kernel(const void *x, enum gd_dtype dt, void *y, red_geom g, int kind)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.n_out; o += step) {
        int64_t base = offset_of(o, g.n_kept, g.kept_shape, g.kept_stride);
        if (kind == RED_ARGMAX || kind == RED_ARGMIN)
            ((int64_t *)y)[o] = int_arg_one(x, dt, base, g, kind == RED_ARGMAX);
        else
            gd__int_store(dt, y, o, int_red_one(x, dt, base, g, kind));
    }
}

static int
int_red_launch(struct gd_op_call *c, const red_geom &g, int kind, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int rc = 0;
    if (g.n_out == 0)
        return 0;
    snprintf(c->algo, sizeof c->algo, "sequential");
    int_red_kernel<<<gd__cuda_blocks(g.n_out), GD_CUDA_THREADS, 0, ctx->compute>>>(
        c->in[0]->data, c->in[0]->dtype, c->out[0]->data, g, kind);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

template <int KIND>
static int
reduce_axes(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    int is_red[GD_MAX_DIMS] = {0};
    int rc = 0;
    if (p->n_axes == 0) { /* noop_with_empty_axes: the input unchanged */
        if (gd_tensor_nbytes(x) > 0)
            GD_CUDA_TRY(cudaMemcpyAsync(c->out[0]->data, x->data, gd_tensor_nbytes(x),
                                        cudaMemcpyDeviceToDevice, ctx->compute));
        goto done;
    }
    for (int i = 0; i < p->n_axes; i++)
        is_red[p->axes[i]] = 1;
    {
        red_geom g = red_geom_of(x, is_red, gd_tensor_numel(c->out[0]), 0);
        if (x->dtype != GD_F32)
            rc = int_red_launch(c, g, KIND, err);
        else
            rc = red_launch<KIND, float>(c, g, err);
    }
done:
    return rc;
}

#define REDUCE_ENTRY(fn, kind)                                                                     \
    extern "C" int gd__cuda_##fn(struct gd_op_call *c, struct gd_err *err)                         \
    {                                                                                              \
        return reduce_axes<kind>(c, err);                                                          \
    }

REDUCE_ENTRY(reduce_sum, RED_SUM)
REDUCE_ENTRY(reduce_mean, RED_MEAN)
REDUCE_ENTRY(reduce_max, RED_MAX)
REDUCE_ENTRY(reduce_min, RED_MIN)
REDUCE_ENTRY(reduce_prod, RED_PROD)
REDUCE_ENTRY(reduce_l1, RED_L1)
REDUCE_ENTRY(reduce_l2, RED_L2)
REDUCE_ENTRY(reduce_sum_square, RED_SUM_SQUARE)
REDUCE_ENTRY(reduce_log_sum, RED_LOG_SUM)
REDUCE_ENTRY(reduce_log_sum_exp, RED_LOG_SUM_EXP)

template <int KIND>
static int
arg_extremum(struct gd_op_call *c, struct gd_err *err)
{
    int is_red[GD_MAX_DIMS] = {0};
    is_red[c->params->axis] = 1;
    red_geom g =
        red_geom_of(c->in[0], is_red, gd_tensor_numel(c->out[0]), c->params->select_last_index);
    if (c->in[0]->dtype != GD_F32)
        return int_red_launch(c, g, KIND, err);
    return red_launch<KIND, int64_t>(c, g, err);
}

extern "C" int
gd__cuda_argmax(struct gd_op_call *c, struct gd_err *err)
{
    return arg_extremum<RED_ARGMAX>(c, err);
}

extern "C" int
gd__cuda_argmin(struct gd_op_call *c, struct gd_err *err)
{
    return arg_extremum<RED_ARGMIN>(c, err);
}

/* ---- Hardmax, CumSum: one thread per row along the axis, the CPU's loop ---- */

/* 1 at the index ArgMax picks (the first maximum, or the first NaN), 0 elsewhere. */
static __global__ void
hardmax_kernel(const float *x, float *y, int64_t outer, int64_t len, int64_t inner)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < outer * inner; r += step) {
        int64_t first = (r / inner) * len * inner + r % inner;
        int64_t best = 0;
        float bv = len > 0 ? x[first] : 0.f;
        for (int64_t a = 1; a < len && !isnan(bv); a++) {
            float v = x[first + a * inner];
            if (isnan(v) || v > bv) {
                bv = v;
                best = a;
            }
        }
        for (int64_t a = 0; a < len; a++)
            y[first + a * inner] = a == best ? 1.f : 0.f;
    }
}

extern "C" int
gd__cuda_hardmax(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t outer, len, inner;
    int rc = 0;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    if (outer * inner == 0 || len == 0)
        return 0;
    snprintf(c->algo, sizeof c->algo, "sequential");
    hardmax_kernel<<<gd__cuda_blocks(outer * inner), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, (float *)c->out[0]->data, outer, len, inner);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * Each row summed in order from +0 (from its end with reverse), x[k] added after y[k] is
 * written with exclusive: the CPU's loop, so the same bits. Integers through elt_rules.h.
 */
static __global__ void
cumsum_kernel(const void *x, void *y, enum gd_dtype dt, int64_t outer, int64_t len, int64_t inner,
              int exclusive, int reverse)
{
    int is_float = dt == GD_F32;
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < outer * inner; r += step) {
        int64_t first = (r / inner) * len * inner + r % inner;
        float acc = 0.f;
        int64_t iacc = 0;
        for (int64_t k = 0; k < len; k++) {
            int64_t at = first + (reverse ? len - 1 - k : k) * inner;
            if (is_float) {
                float v = ((const float *)x)[at];
                if (!exclusive)
                    acc = __fadd_rn(acc, v);
                ((float *)y)[at] = acc;
                if (exclusive)
                    acc = __fadd_rn(acc, v);
            } else {
                int64_t v = gd__int_load(dt, x, at);
                if (!exclusive)
                    iacc = gd__int_binary(GD_IOP_ADD, iacc, v, uns, bits);
                gd__int_store(dt, y, at, iacc);
                if (exclusive)
                    iacc = gd__int_binary(GD_IOP_ADD, iacc, v, uns, bits);
            }
        }
    }
}

extern "C" int
gd__cuda_cumsum(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t outer, len, inner;
    int rc = 0;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    if (outer * inner == 0 || len == 0)
        return 0;
    snprintf(c->algo, sizeof c->algo, "sequential");
    cumsum_kernel<<<gd__cuda_blocks(outer * inner), GD_CUDA_THREADS, 0, ctx->compute>>>(
        c->in[0]->data, c->out[0]->data, c->in[0]->dtype, outer, len, inner, c->params->exclusive,
        c->params->reverse);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}
