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

/* The block's sum of its threads' partials v, by the fixed tree; every thread gets it. */
static __device__ float
block_sum(float v, float *partial)
{
    int tid = threadIdx.x;
    partial[tid] = v;
    __syncthreads();
    for (int s = NORM_THREADS / 2; s > 0; s >>= 1) {
        if (tid < s)
            partial[tid] = __fadd_rn(partial[tid], partial[tid + s]);
        __syncthreads();
    }
    float total = partial[0];
    __syncthreads(); /* partial[0] is read before the next use overwrites it */
    return total;
}

/* The mean and population variance of group grp, in the order the header states. */
static __device__ void
group_stats(const float *x, const gd__norm_geom &g, int64_t grp, float *partial, float *mean,
            float *var)
{
    const float *xg = x + gd__norm_group_offset(&g, grp);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS)
        s = __fadd_rn(s, xg[gd__norm_elem_offset(&g, j)]);
    float m = __fdiv_rn(block_sum(s, partial), (float)g.len);
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS) {
        float d = __fsub_rn(xg[gd__norm_elem_offset(&g, j)], m);
        q = __fadd_rn(q, __fmul_rn(d, d));
    }
    *mean = m;
    *var = __fdiv_rn(block_sum(q, partial), (float)g.len);
}

enum norm_kind { NORM_AFFINE, NORM_MVN, NORM_STATS_ONLY };

/*
 * One block per group (grid-stride over groups). NORM_AFFINE: Instance-, Layer-,
 * GroupNormalization, with the optional mean and r outputs (LayerNormalization's Mean and
 * InvStdDev); NORM_MVN; NORM_STATS_ONLY: BatchNormalization's batch mean and variance into
 * mean_out and r_out.
 */
static __global__ void
normalize_kernel(const float *__restrict__ x, float *__restrict__ y, gd__norm_geom g,
                 enum norm_kind kind, const float *__restrict__ scale, gd__norm_affine scale_at,
                 const float *__restrict__ bias, gd__norm_affine bias_at, float eps,
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
                y[o] = __fdiv_rn(__fsub_rn(x[o], mean), t);
            }
            continue;
        }
        float r = __fdiv_rn(1.0f, sqrtf(__fadd_rn(var, eps)));
        for (int64_t j = threadIdx.x; j < g.len; j += NORM_THREADS) {
            int64_t o = base + gd__norm_elem_offset(&g, j);
            float v = __fmul_rn(__fmul_rn(__fsub_rn(x[o], mean), r),
                                scale[gd__norm_affine_index(&scale_at, grp, j)]);
            if (bias != NULL)
                v = __fadd_rn(v, bias[gd__norm_affine_index(&bias_at, grp, j)]);
            y[o] = v;
        }
        if (threadIdx.x == 0 && mean_out != NULL)
            mean_out[grp] = mean;
        if (threadIdx.x == 0 && r_out != NULL)
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

static int
launch_normalize(struct gd_op_call *c, enum norm_kind kind, float *mean_out, float *r_out,
                 struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    gd__norm_geom g;
    gd__norm_affine scale_at, bias_at;
    gd__norm_setup(c, &g, &scale_at, &bias_at);
    int rc = 0;
    if (g.groups == 0 || g.len == 0)
        return 0;
    const float *scale = NULL, *bias = NULL;
    if (kind == NORM_AFFINE) {
        scale = (const float *)c->in[1]->data;
        bias = c->n_in > 2 && c->in[2] != NULL ? (const float *)c->in[2]->data : NULL;
    }
    normalize_kernel<<<group_grid(g.groups), NORM_THREADS, 0, ctx->compute>>>(
        (const float *)c->in[0]->data, kind == NORM_STATS_ONLY ? NULL : (float *)c->out[0]->data,
        g, kind, scale, scale_at, bias, bias_at, (float)c->params->epsilon, mean_out, r_out);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "tree256");
done:
    return rc;
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
