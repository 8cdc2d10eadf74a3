/*
 * op_norm.cu: the normalizations on the GPU.
 *
 * BatchNormalization in inference mode: cuDNN's spatial batch norm, as the frameworks use it,
 * for an epsilon cuDNN accepts (>= CUDNN_BN_MIN_EPSILON); below that, a kernel with the
 * CPU's folded formula y = x * a + b, a = scale / sqrt(var + eps), b = bias - mean * a.
 *
 * The statistics of the other normalizations, and of BatchNormalization in training mode,
 * are gpudiff's own kernels (cuDNN's training batch norm keeps an unbiased running variance,
 * ONNX a biased one): one block of 256 threads per group (engine/core/norm_rules.h says which
 * elements). Thread t adds elements t, t + 256, t + 512, ... of the group (C order of the
 * reduced axes) from +0; a shared-memory tree then adds partial t + s into partial t for
 * s = 128, 64, ..., 1; mean = sum / n. The variance is the same walk and tree over
 * (x - mean)^2, divided by n. The grouping depends only on n, so every run gives the same
 * bits; it differs from the CPU's sequential sums by reassociation (docs/CUDA_KERNELS.md).
 * Every product and sum is written with __fmul_rn / __fadd_rn / __fsub_rn, so nvcc fuses
 * nothing and each step rounds as the CPU's does; the normalizing steps are the CPU's:
 * r = 1 / sqrt(var + eps), y = ((x - mean) * r) * scale + bias, or (x - mean) / (sqrt(var) +
 * 1e-9) for MeanVarianceNormalization. LRN is one thread per output with the CPU's window walk
 * and powf.
 */
#include <stdio.h>

#include "half.cuh"
#include "kernels.cuh"
#include "../core/norm_rules.h"

static __global__ void
batch_norm_folded(const float *__restrict__ x, float *__restrict__ y,
                  const float *__restrict__ scale, const float *__restrict__ bias,
                  const float *__restrict__ mean, const float *__restrict__ var, float eps,
                  int64_t channels, int64_t inner, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = (i / inner) % channels;
        float a = __fdiv_rn(scale[ch], sqrtf(__fadd_rn(var[ch], eps)));
        float b = __fsub_rn(bias[ch], __fmul_rn(mean[ch], a));
        y[i] = __fadd_rn(__fmul_rn(x[i], a), b);
    }
}

/* Threads per group; the tree below is built on this. */
#define NORM_THREADS 256
/* A group of at most NORM_THREADS * NORM_HELD elements, contiguous, is held in registers
 * between its passes (LayerNormalization over a transformer's d_model). */
#define NORM_HELD 8

/*
 * The block's sum of its threads' partials v, by the fixed tree: partial t + s added into
 * partial t for s = 128, 64, ..., 1. The steps down to s = 32 go through shared memory; the
 * last five, within warp 0, through shuffles, which add the same two partials in the same
 * order (lane t < s reads lane t + s, which holds the previous step's partial). Every
 * thread gets the sum.
 */
static __device__ float
block_sum(float v, float *partial)
{
    int tid = threadIdx.x;
    partial[tid] = v;
    __syncthreads();
    for (int s = NORM_THREADS / 2; s >= 32; s >>= 1) {
        if (tid < s)
            partial[tid] = __fadd_rn(partial[tid], partial[tid + s]);
        __syncthreads();
    }
    if (tid < 32) {
        float t = partial[tid];
        for (int s = 16; s > 0; s >>= 1)
            t = __fadd_rn(t, __shfl_down_sync(0xffffffffu, t, s));
        if (tid == 0)
            partial[0] = t;
    }
    __syncthreads();
    float total = partial[0];
    __syncthreads(); /* partial[0] is read before the next use overwrites it */
    return total;
}

/* The mean and population variance of group grp, in the order the header states. */
template <class T>
static __device__ void
group_stats(const T *x, const gd__norm_geom &g, int64_t grp, float *partial, float *mean,
            float *var)
{
    const T *xg = x + gd__norm_group_offset(&g, grp);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS)
        s = __fadd_rn(s, gd__ld(xg, gd__norm_elem_offset(&g, j)));
    float m = __fdiv_rn(block_sum(s, partial), (float)g.len);
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS) {
        float d = __fsub_rn(gd__ld(xg, gd__norm_elem_offset(&g, j)), m);
        q = __fadd_rn(q, __fmul_rn(d, d));
    }
    *mean = m;
    *var = __fdiv_rn(block_sum(q, partial), (float)g.len);
}

enum norm_kind { NORM_AFFINE, NORM_MVN, NORM_STATS_ONLY };

/*
 * One block per group (grid-stride over groups). NORM_AFFINE: Instance-, Layer-,
 * GroupNormalization, with the optional mean and r outputs (LayerNormalization's Mean and
 * InvStdDev, float32); NORM_MVN; NORM_STATS_ONLY: BatchNormalization's batch mean and
 * variance into mean_out and r_out. x, y, scale and bias are stored as T.
 */
template <class T>
static __global__ void
normalize_kernel(const T *__restrict__ x, T *__restrict__ y, gd__norm_geom g,
                 enum norm_kind kind, const T *__restrict__ scale, gd__norm_affine scale_at,
                 const T *__restrict__ bias, gd__norm_affine bias_at, float eps,
                 float *__restrict__ mean_out, float *__restrict__ r_out)
{
    __shared__ float partial[NORM_THREADS];
    for (int64_t grp = blockIdx.x; grp < g.groups; grp += gridDim.x) {
        float mean, var;
        group_stats(x, g, grp, partial, &mean, &var);
        if (kind == NORM_STATS_ONLY) {
            if (threadIdx.x == 0) {
                mean_out[grp] = mean;
                r_out[grp] = var;
            }
            continue;
        }
        int64_t base = gd__norm_group_offset(&g, grp);
        if (kind == NORM_MVN) {
            float t = __fadd_rn(sqrtf(var), eps);
            for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS) {
                int64_t o = base + gd__norm_elem_offset(&g, j);
                gd__st(y, o, __fdiv_rn(__fsub_rn(gd__ld(x, o), mean), t));
            }
            continue;
        }
        float r = __fdiv_rn(1.0f, sqrtf(__fadd_rn(var, eps)));
        for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS) {
            int64_t o = base + gd__norm_elem_offset(&g, j);
            float v = __fmul_rn(__fmul_rn(__fsub_rn(gd__ld(x, o), mean), r),
                                gd__ld(scale, gd__norm_affine_index(&scale_at, grp, j)));
            if (bias != NULL)
                v = __fadd_rn(v, gd__ld(bias, gd__norm_affine_index(&bias_at, grp, j)));
            gd__st(y, o, v);
        }
        if (threadIdx.x == 0 && mean_out != NULL)
            mean_out[grp] = mean;
        if (threadIdx.x == 0 && r_out != NULL)
            r_out[grp] = r;
    }
}

/*
 * NORM_AFFINE over contiguous groups of at most NORM_THREADS * NORM_HELD elements whose
 * scale and bias run along the group (LayerNormalization over the last axes): the same sums
 * in the same order and the same steps as normalize_kernel, with each thread's elements
 * (j = tid, tid + 256, ...) read once into registers for the three passes and no index
 * arithmetic.
 */
template <class T>
static __global__ void
normalize_rows_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t groups, int64_t len,
                      const T *__restrict__ scale, const T *__restrict__ bias, float eps,
                      float *__restrict__ mean_out, float *__restrict__ r_out)
{
    __shared__ float partial[NORM_THREADS];
    int tid = threadIdx.x;
    for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const T *xg = x + grp * len;
        float held[NORM_HELD];
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < NORM_HELD; k++) {
            int64_t j = tid + (int64_t)k * NORM_THREADS;
            held[k] = j < len ? gd__ld(xg, j) : 0.f;
            if (j < len)
                s = __fadd_rn(s, held[k]);
        }
        float m = __fdiv_rn(block_sum(s, partial), (float)len);
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < NORM_HELD; k++) {
            int64_t j = tid + (int64_t)k * NORM_THREADS;
            if (j < len) {
                float d = __fsub_rn(held[k], m);
                q = __fadd_rn(q, __fmul_rn(d, d));
            }
        }
        float var = __fdiv_rn(block_sum(q, partial), (float)len);
        float r = __fdiv_rn(1.0f, sqrtf(__fadd_rn(var, eps)));
        T *yg = y + grp * len;
#pragma unroll
        for (int k = 0; k < NORM_HELD; k++) {
            int64_t j = tid + (int64_t)k * NORM_THREADS;
            if (j < len) {
                float v = __fmul_rn(__fmul_rn(__fsub_rn(held[k], m), r), gd__ld(scale, j));
                if (bias != NULL)
                    v = __fadd_rn(v, gd__ld(bias, j));
                gd__st(yg, j, v);
            }
        }
        if (tid == 0 && mean_out != NULL)
            mean_out[grp] = m;
        if (tid == 0 && r_out != NULL)
            r_out[grp] = r;
    }
}

/* running = input * momentum + batch * (1 - momentum), for mean and variance. */
static __global__ void
running_stats(const float *__restrict__ in, const float *__restrict__ batch,
              float *__restrict__ out, float momentum, int64_t n)
{
    float keep = __fsub_rn(1.0f, momentum);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = __fadd_rn(__fmul_rn(in[i], momentum), __fmul_rn(batch[i], keep));
}

static unsigned
group_grid(int64_t groups)
{
    return (unsigned)(groups < 65535LL * 8 ? (groups > 0 ? groups : 1) : 65535LL * 8);
}

/* 1 when the affine tensor's element j of any group is its element j (a tensor of the
 * group's length, broadcast over the groups). */
static int
affine_is_row(const gd__norm_affine *f, int64_t len)
{
    return f->g_mul == 0 && f->nt == 1 && f->t_dim[0] == len && f->t_stride[0] == 1;
}

template <class T>
static int
normalize_typed(struct gd_op_call *c, enum norm_kind kind, float *mean_out, float *r_out,
                struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    gd__norm_geom g;
    gd__norm_affine scale_at, bias_at;
    gd__norm_setup(c, &g, &scale_at, &bias_at);
    int rc = 0;
    if (g.groups == 0 || g.len == 0)
        return 0;
    const T *x = (const T *)c->in[0]->data, *scale = NULL, *bias = NULL;
    T *y = kind == NORM_STATS_ONLY ? NULL : (T *)c->out[0]->data;
    if (kind == NORM_AFFINE) {
        scale = (const T *)c->in[1]->data;
        bias = c->n_in > 2 && c->in[2] != NULL ? (const T *)c->in[2]->data : NULL;
    }
    snprintf(c->algo, sizeof c->algo, "tree256");
    int rows = kind == NORM_AFFINE && g.nk <= 1 && g.nr == 1 && g.r_stride[0] == 1 &&
               g.len <= (int64_t)NORM_THREADS * NORM_HELD && affine_is_row(&scale_at, g.len) &&
               (bias == NULL || affine_is_row(&bias_at, g.len));
    if (rows)
        normalize_rows_kernel<<<group_grid(g.groups), NORM_THREADS, 0, ctx->compute>>>(
            x, y, g.groups, g.len, scale, bias, (float)c->params->epsilon, mean_out, r_out);
    else
        normalize_kernel<<<group_grid(g.groups), NORM_THREADS, 0, ctx->compute>>>(
            x, y, g, kind, scale, scale_at, bias, bias_at, (float)c->params->epsilon, mean_out,
            r_out);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/*
 * x, y, scale and bias of one float dtype (float32, or float16 or bfloat16 storage: loaded as
 * float32, the statistics and every step in float32, y rounded once); the statistics outputs
 * are float32. Other mixes run on float32 copies (half_call.c).
 */
static int
launch_normalize(struct gd_op_call *c, enum norm_kind kind, float *mean_out, float *r_out,
                 struct gd_err *err)
{
    enum gd_dtype dt = c->in[0]->dtype;
    int same = gd__cuda_stored_float(dt);
    for (int i = 1; i < c->n_in && i < 3 && kind == NORM_AFFINE; i++)
        same = same && (c->in[i] == NULL || c->in[i]->dtype == dt);
    if (kind != NORM_STATS_ONLY)
        same = same && c->out[0]->dtype == dt;
    for (int k = 1; k < c->n_out; k++)
        same = same && (c->out[k] == NULL || c->out[k]->dtype == GD_F32);
    if (!same)
        return gd__cuda_half_fallback(c, err);
    return GD_CUDA_FLOAT_CASES(dt, normalize_typed<T>(c, kind, mean_out, r_out, err));
}

/* y = x * a + b with the given mean and var, by the folded kernel. */
static int
launch_folded(struct gd_op_call *c, const float *mean, const float *var, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], ch = x->shape[1], total = gd_tensor_numel(x);
    int64_t inner = n > 0 && ch > 0 ? total / (n * ch) : 0;
    int rc = 0;
    if (total == 0)
        return 0;
    batch_norm_folded<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)x->data, (float *)c->out[0]->data, (const float *)c->in[1]->data,
        (const float *)c->in[2]->data, mean, var, (float)c->params->epsilon, ch, inner, total);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

static int
batch_norm_training(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int64_t ch = c->in[0]->shape[1];
    void *stats = NULL;
    int rc = gd__cuda_scratch(ctx, (size_t)(2 * (ch > 0 ? ch : 1)) * sizeof(float), &stats, err);
    if (rc != 0)
        return rc;
    float *mean = (float *)stats, *var = mean + ch;
    rc = launch_normalize(c, NORM_STATS_ONLY, mean, var, err);
    if (rc == 0)
        rc = launch_folded(c, mean, var, err);
    for (int o = 1; rc == 0 && o < c->n_out; o++) {
        if (c->out[o] == NULL || ch == 0)
            continue;
        running_stats<<<gd__cuda_blocks(ch), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)c->in[o + 2]->data, o == 1 ? mean : var, (float *)c->out[o]->data,
            (float)c->params->momentum, ch);
        GD_CUDA_CHECK_LAUNCH();
    }
    snprintf(c->algo, sizeof c->algo, "gpudiff tree256 batch statistics");
done:
    gd__cuda_scratch_free(ctx, stats);
    return rc;
}

extern "C" int
gd__cuda_batch_norm(struct gd_op_call *c, struct gd_err *err)
{
    if (c->params->training_mode)
        return batch_norm_training(c, err);
    int rc = 0;
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], ch = x->shape[1];
    int64_t inner = n > 0 && ch > 0 ? gd_tensor_numel(x) / (n * ch) : 0;
    int64_t total = gd_tensor_numel(x);
    cudnnTensorDescriptor_t xd = NULL, pd = NULL;
    int fits = c->params->epsilon >= CUDNN_BN_MIN_EPSILON && n <= INT32_MAX && ch <= INT32_MAX &&
               inner <= INT32_MAX && total <= INT32_MAX && total > 0;
    snprintf(c->algo, sizeof c->algo, "%s", fits ? "cudnn batchnorm spatial" : "gpudiff folded");
    if (total == 0)
        return 0;
    if (!fits)
        return launch_folded(c, (const float *)c->in[3]->data, (const float *)c->in[4]->data,
                             err);
    {
        const float one = 1.0f, zero = 0.0f;
        GD_CUDA_TRY(cudnnCreateTensorDescriptor(&xd));
        GD_CUDA_TRY(cudnnCreateTensorDescriptor(&pd));
        /* the inner dimensions fold into H: spatial statistics are per channel either way */
        GD_CUDA_TRY(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)n,
                                               (int)ch, (int)inner, 1));
        GD_CUDA_TRY(cudnnDeriveBNTensorDescriptor(pd, xd, CUDNN_BATCHNORM_SPATIAL));
        GD_CUDA_TRY(cudnnBatchNormalizationForwardInference(
            ctx->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x->data, xd, c->out[0]->data,
            pd, c->in[1]->data, c->in[2]->data, c->in[3]->data, c->in[4]->data,
            c->params->epsilon));
    }
done:
    if (xd != NULL)
        cudnnDestroyTensorDescriptor(xd);
    if (pd != NULL)
        cudnnDestroyTensorDescriptor(pd);
    return rc;
}

extern "C" int
gd__cuda_instance_norm(struct gd_op_call *c, struct gd_err *err)
{
    return launch_normalize(c, NORM_AFFINE, NULL, NULL, err);
}

extern "C" int
gd__cuda_layer_norm(struct gd_op_call *c, struct gd_err *err)
{
    float *mean = c->n_out > 1 && c->out[1] != NULL ? (float *)c->out[1]->data : NULL;
    float *r = c->n_out > 2 && c->out[2] != NULL ? (float *)c->out[2]->data : NULL;
    return launch_normalize(c, NORM_AFFINE, mean, r, err);
}

extern "C" int
gd__cuda_group_norm(struct gd_op_call *c, struct gd_err *err)
{
    return launch_normalize(c, NORM_AFFINE, NULL, NULL, err);
}

extern "C" int
gd__cuda_mean_variance_norm(struct gd_op_call *c, struct gd_err *err)
{
    return launch_normalize(c, NORM_MVN, NULL, NULL, err);
}

/* LRN: one thread per output; the window's squares from +0, channels ascending, as the CPU. */
static __global__ void
lrn_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t channels, int64_t inner,
           int64_t before, int64_t after, float bias, float alpha_n, float beta, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t pos = i % inner, c = i / inner % channels, img = i / (inner * channels);
        int64_t lo = c - before > 0 ? c - before : 0;
        int64_t hi = c + after < channels - 1 ? c + after : channels - 1;
        const float *xn = x + img * channels * inner + pos;
        float s = 0.f;
        for (int64_t k = lo; k <= hi; k++)
            s = __fadd_rn(s, __fmul_rn(xn[k * inner], xn[k * inner]));
        y[i] = __fdiv_rn(x[i], powf(__fadd_rn(bias, __fmul_rn(alpha_n, s)), beta));
    }
}

extern "C" int
gd__cuda_lrn(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    int64_t n = x->shape[0], ch = x->shape[1], total = gd_tensor_numel(x);
    int64_t inner = n > 0 && ch > 0 ? total / (n * ch) : 0;
    int rc = 0;
    if (total == 0)
        return 0;
    /* alpha / size rounded to float once, as the CPU does */
    float alpha_n = (float)p->alpha / (float)p->lrn_size;
    lrn_kernel<<<gd__cuda_blocks(total), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)x->data, (float *)c->out[0]->data, ch, inner, (p->lrn_size - 1) / 2,
        p->lrn_size / 2, (float)p->lrn_bias, alpha_n, (float)p->beta, total);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}
