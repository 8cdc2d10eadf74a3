/* op_reduce.cu: reductions on the GPU: Softmax and LogSoftmax through cuDNN, ReduceSum,
 * ReduceMean, ReduceMax and ArgMax with gpudiff's own deterministic kernels. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

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
done:
    if (desc != NULL)
        cudnnDestroyTensorDescriptor(desc);
    return rc;
}

extern "C" int
gd__cuda_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_cudnn(c, CUDNN_SOFTMAX_ACCURATE, err);
}

extern "C" int
gd__cuda_log_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_cudnn(c, CUDNN_SOFTMAX_LOG, err);
}

/* ---- ReduceSum, ReduceMean, ReduceMax, ArgMax ---- */

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
    int last; /* ArgMax select_last_index */
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

enum red_kind { RED_SUM, RED_MEAN, RED_MAX, RED_ARGMAX };

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
    s.v = KIND == RED_SUM || KIND == RED_MEAN ? 0.f : -INFINITY;
    s.at = -1;
    return s;
}

/*
 * Folds term t into s, t ascending: the CPU's loops. ReduceMax starts at -inf, takes v when
 * greater or NaN, and stops at the first NaN. ArgMax starts at the first term, stops at the
 * first NaN, takes NaN or a greater value (an equal one too with select_last_index).
 */
template <int KIND>
static __device__ __forceinline__ void
red_step(red_state &s, float v, int64_t t, int last)
{
    if (KIND == RED_SUM || KIND == RED_MEAN) {
        s.v += v;
    } else if (KIND == RED_MAX) {
        if (!isnan(s.v) && (v > s.v || isnan(v))) {
            s.v = v;
            s.at = t;
        }
    } else {
        if (s.at < 0 || (!isnan(s.v) && (isnan(v) || v > s.v || (last && v == s.v)))) {
            s.v = v;
            s.at = t;
        }
    }
}

/*
 * Whether partial b replaces partial a when two parts of the terms meet. What the sequential
 * loops above pick over all terms is: the first NaN if there is one; else the maximum, at its
 * first term (its last for ArgMax with select_last_index), -0 and +0 being equal. Deciding by
 * the term indices gives exactly that whatever the grouping, so the tree reproduces the CPU's
 * bits and NaN.
 */
static __device__ __forceinline__ bool
takes_over(red_state a, red_state b, int last)
{
    if (b.at < 0)
        return false;
    if (a.at < 0)
        return true;
    if (isnan(a.v))
        return isnan(b.v) && b.at < a.at;
    if (isnan(b.v))
        return true;
    if (b.v != a.v)
        return b.v > a.v;
    return last ? b.at > a.at : b.at < a.at;
}

/* a holds the lower terms' partial: sums add in a fixed order, a + b. */
template <int KIND>
static __device__ __forceinline__ red_state
red_join(red_state a, red_state b, int last)
{
    if (KIND == RED_SUM || KIND == RED_MEAN) {
        a.v = a.v + b.v;
        return a;
    }
    return takes_over(a, b, last) ? b : a;
}

template <int KIND, class T>
static __device__ __forceinline__ void
red_store(T *y, int64_t o, red_state s, int64_t count)
{
    if constexpr (KIND == RED_ARGMAX)
        y[o] = s.at;
    else if constexpr (KIND == RED_MEAN)
        y[o] = s.v / (float)count; /* the sum divided once; 0 / 0 = NaN for no terms */
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
 * One block per output (grid-stride over outputs). Thread i folds terms i, i + 256, i + 512,
 * ... in order; then a shared-memory tree joins partial i + s into partial i for s = 128, 64,
 * ..., 1. The grouping depends only on the shape, never on timing: two runs give the same
 * bits, and no atomics are involved.
 */
template <int KIND, class T>
static __global__ void
red_tree_kernel(const float *x, T *y, red_geom g)
{
    __shared__ float part_v[RED_THREADS];
    __shared__ int64_t part_at[RED_THREADS];
    int tid = threadIdx.x;
    for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
        const float *xo = x + offset_of(o, g.n_kept, g.kept_shape, g.kept_stride);
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
        if (tid == 0) {
            red_state r = {part_v[0], part_at[0]};
            red_store<KIND>(y, o, r, g.count);
        }
        /* the partials are read before the next output overwrites them */
        __syncthreads();
    }
}

/*
 * Max and ArgMax give the same bits by either kernel, so short reductions take one thread
 * per output (no idle threads); sums always take the tree, so their order depends on nothing
 * but the tree's fixed shape.
 */
#define RED_SEQ_MAX_TERMS 64

template <int KIND, class T>
static int
red_launch(struct gd_op_call *c, const red_geom &g, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const float *x = (const float *)c->in[0]->data;
    T *y = (T *)c->out[0]->data;
    int seq = (KIND == RED_MAX || KIND == RED_ARGMAX) && g.count <= RED_SEQ_MAX_TERMS;
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
        red_tree_kernel<KIND, T><<<(unsigned)grid, RED_THREADS, 0, ctx->compute>>>(x, y, g);
    }
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
    rc = red_launch<KIND, float>(c, red_geom_of(x, is_red, gd_tensor_numel(c->out[0]), 0), err);
done:
    return rc;
}

extern "C" int
gd__cuda_reduce_sum(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes<RED_SUM>(c, err);
}

extern "C" int
gd__cuda_reduce_mean(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes<RED_MEAN>(c, err);
}

extern "C" int
gd__cuda_reduce_max(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes<RED_MAX>(c, err);
}

extern "C" int
gd__cuda_argmax(struct gd_op_call *c, struct gd_err *err)
{
    int is_red[GD_MAX_DIMS] = {0};
    is_red[c->params->axis] = 1;
    return red_launch<RED_ARGMAX, int64_t>(
        c, red_geom_of(c->in[0], is_red, gd_tensor_numel(c->out[0]), c->params->select_last_index),
        err);
}
