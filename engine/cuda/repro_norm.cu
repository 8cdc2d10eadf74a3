/*
 * repro_norm.cu: the normalizations under --repro bitwise: BatchNormalization (inference and
 * training_mode), InstanceNormalization, LayerNormalization, GroupNormalization,
 * MeanVarianceNormalization and LRN, with engine/cpu/op_norm.c's formulas and orders:
 *   BatchNormalization: a = scale / sqrt(var + eps), b = bias - mean a, y = x a + b per
 *     channel (training: mean and var the batch's, as below; running = in m + batch (1 - m));
 *   a group of n elements (engine/core/norm_rules.h's walk): mean = (sum x from +0) / n,
 *     var = (sum (x - mean)^2 from +0) / n, two sequential passes in one thread; then
 *     r = 1 / sqrt(var + eps), y = ((x - mean) r) scale + bias (MeanVarianceNormalization:
 *     y = (x - mean) / (sqrt(var) + eps));
 *   LRN: s = the window's squares from +0, channels ascending; y = x / pow(bias + a s, beta).
 * Groups that are contiguous rows are streamed through a warp (repro.cuh).
 */
#include "repro.cuh"
#include "repro.h"

#include "../core/math_rules.h"
#include "../core/norm_rules.h"

/* y = x a + b per channel, a and b from scale, bias, mean, var as the CPU folds them */
static __global__ void
bn_folded(const float *__restrict__ x, float *__restrict__ y, const float *__restrict__ scale,
          const float *__restrict__ bias, const float *__restrict__ mean,
          const float *__restrict__ var, float eps, int64_t ch, int64_t inner, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i / inner % ch;
        float a = __fdiv_rn(scale[k], gd__sqrtf(__fadd_rn(var[k], eps)));
        float b = __fsub_rn(bias[k], __fmul_rn(mean[k], a));
        y[i] = __fadd_rn(__fmul_rn(x[i], a), b);
    }
}

/* What a group's statistics feed: the normalized output, or (BatchNormalization's training
 * statistics) only the mean and variance. */
enum norm_kind { N_AFFINE, N_MVN, N_STATS };

struct norm_args {
    gd__norm_geom g;
    gd__norm_affine scale_at, bias_at;
    const float *x, *scale, *bias;
    float *y, *mean, *r; /* mean and r per group (LayerNormalization), or mean and var */
    float eps;
    int kind;
};

/* y of element j of group grp from its statistics */
static __device__ __forceinline__ float
norm_out(const norm_args &a, int64_t grp, int64_t j, float v, float mean, float r, float t)
{
    if (a.kind == N_MVN)
        return __fdiv_rn(__fsub_rn(v, mean), t);
    float o = __fmul_rn(__fmul_rn(__fsub_rn(v, mean), r),
                        a.scale[gd__norm_affine_index(&a.scale_at, grp, j)]);
    if (a.bias != NULL)
        o = __fadd_rn(o, a.bias[gd__norm_affine_index(&a.bias_at, grp, j)]);
    return o;
}

/* After the two passes: mean and var; r (or t for MVN); the per-group outputs. */
static __device__ __forceinline__ void
norm_finish(const norm_args &a, int64_t grp, float sum, float sq, float mean, float *r, float *t)
{
    float var = __fdiv_rn(sq, (float)a.g.len);
    if (a.kind == N_STATS) {
        a.mean[grp] = mean;
        a.r[grp] = var;
        return;
    }
    *t = __fadd_rn(gd__sqrtf(var), a.eps);
    *r = __fdiv_rn(1.0f, gd__sqrtf(__fadd_rn(var, a.eps)));
    if (a.kind == N_AFFINE && a.mean != NULL)
        a.mean[grp] = mean;
    if (a.kind == N_AFFINE && a.r != NULL)
        a.r[grp] = *r;
}

/* One thread per group. */
static __global__ void
norm_kernel(norm_args a)
{
    const gd__norm_geom &g = a.g;
    for (int64_t grp = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; grp < g.groups;
         grp += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = gd__norm_group_offset(&g, grp);
        const float *xg = a.x + base;
        float sum = 0.0f, sq = 0.0f, r = 0.0f, t = 0.0f;
        for (int64_t j = 0; j < g.len; j++)
            sum = __fadd_rn(sum, xg[gd__norm_elem_offset(&g, j)]);
        float mean = __fdiv_rn(sum, (float)g.len);
        for (int64_t j = 0; j < g.len; j++) {
            float d = __fsub_rn(xg[gd__norm_elem_offset(&g, j)], mean);
            sq = __fadd_rn(sq, __fmul_rn(d, d));
        }
        norm_finish(a, grp, sum, sq, mean, &r, &t);
        if (a.kind == N_STATS)
            continue;
        for (int64_t j = 0; j < g.len; j++) {
            int64_t o = gd__norm_elem_offset(&g, j);
            a.y[base + o] = norm_out(a, grp, j, xg[o], mean, r, t);
        }
    }
}

/* Groups that are consecutive contiguous rows: a warp per 32 of them. */
static __global__ void
norm_rows_kernel(norm_args a)
{
    __shared__ gd__repro_tile_t tiles[GD_REPRO_ROW_WARPS];
    gd__repro_tile_t &tile = tiles[threadIdx.x / 32];
    const int64_t rows = a.g.groups, len = a.g.len;
    GD_REPRO_FOR_ROWS(row0, rows)
    {
        int64_t grp = row0 + (threadIdx.x & 31);
        float sum = 0.0f, sq = 0.0f, r = 0.0f, t = 0.0f;
        gd__repro_rows(a.x, rows, len, row0, tile, [&](float v) { sum = __fadd_rn(sum, v); });
        float mean = __fdiv_rn(sum, (float)len);
        gd__repro_rows(a.x, rows, len, row0, tile, [&](float v) {
            float d = __fsub_rn(v, mean);
            sq = __fadd_rn(sq, __fmul_rn(d, d));
        });
        if (grp < rows)
            norm_finish(a, grp, sum, sq, mean, &r, &t);
        if (a.kind == N_STATS)
            continue;
        gd__repro_rows_map(a.x, a.y, rows, len, row0, tile,
                           [&](float v, int64_t j) { return norm_out(a, grp, j, v, mean, r, t); });
    }
}

static int
normalize(struct gd_op_call *c, int kind, float *mean, float *r, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    norm_args a = {};
    gd__norm_setup(c, &a.g, &a.scale_at, &a.bias_at);
    a.x = (const float *)c->in[0]->data;
    a.y = kind == N_STATS ? NULL : (float *)c->out[0]->data;
    if (kind == N_AFFINE) {
        a.scale = (const float *)c->in[1]->data;
        a.bias = c->n_in > 2 && c->in[2] != NULL ? (const float *)c->in[2]->data : NULL;
    }
    a.mean = mean;
    a.r = r;
    a.eps = (float)c->params->epsilon;
    a.kind = kind;
    int rc = 0;
    if (a.g.groups == 0 || a.g.len == 0)
        return 0;
    const gd__norm_geom &g = a.g;
    int rows =
        g.nr == 1 && g.r_stride[0] == 1 && (g.nk == 0 || (g.nk == 1 && g.k_stride[0] == g.len));
    if (rows)
        norm_rows_kernel<<<gd__repro_row_blocks(ctx, g.groups), 32 * GD_REPRO_ROW_WARPS, 0,
                           ctx->compute>>>(a);
    else
        norm_kernel<<<gd__repro_elt_blocks(ctx, g.groups), GD_CUDA_THREADS, 0, ctx->compute>>>(a);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}

static int
folded(struct gd_op_call *c, const float *mean, const float *var, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], ch = x->shape[1], total = gd_tensor_numel(x);
    int64_t inner = n > 0 && ch > 0 ? total / (n * ch) : 0;
    int rc = 0;
    if (total == 0)
        return 0;
    bn_folded<<<gd__repro_elt_blocks(ctx, total), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)x->data, (float *)c->out[0]->data, (const float *)c->in[1]->data,
        (const float *)c->in[2]->data, mean, var, (float)c->params->epsilon, ch, inner, total);
    GD_CUDA_CHECK_LAUNCH();
done:
    return rc;
}

/* running = in m + batch (1 - m), 1 - m rounded once in float as on the CPU */
static __global__ void
running(const float *__restrict__ in, const float *__restrict__ batch, float *__restrict__ out,
        float m, int64_t n)
{
    float keep = __fsub_rn(1.0f, m);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = __fadd_rn(__fmul_rn(in[i], m), __fmul_rn(batch[i], keep));
}

/* no elements: mean and var are 0 / 0, NaN, as the CPU's mean of nothing */
static __global__ void
fill_nan(float *v, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        v[i] = __uint_as_float(0x7fc00000u);
}

extern "C" int
gd__cuda_repro_batch_norm(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    int rc = 0;
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise folded");
    if (!c->params->training_mode)
        return folded(c, (const float *)c->in[3]->data, (const float *)c->in[4]->data, err);
    int64_t ch = c->in[0]->shape[1];
    void *stats = NULL;
    if ((rc = gd__cuda_scratch(ctx, (size_t)(2 * (ch > 0 ? ch : 1)) * sizeof(float), &stats,
                               err)) != 0)
        return rc;
    float *mean = (float *)stats, *var = mean + ch;
    gd__norm_geom g;
    gd__norm_affine sa, ba;
    gd__norm_setup(c, &g, &sa, &ba);
    if (g.len > 0)
        rc = normalize(c, N_STATS, mean, var, err);
    else if (ch > 0) {
        fill_nan<<<gd__repro_elt_blocks(ctx, 2 * ch), GD_CUDA_THREADS, 0, ctx->compute>>>(mean,
                                                                                          2 * ch);
        GD_CUDA_CHECK_LAUNCH();
    }
    if (rc == 0)
        rc = folded(c, mean, var, err);
    for (int o = 1; rc == 0 && o < c->n_out; o++) {
        if (c->out[o] == NULL || ch == 0)
            continue;
        running<<<gd__repro_elt_blocks(ctx, ch), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)c->in[o + 2]->data, o == 1 ? mean : var, (float *)c->out[o]->data,
            (float)c->params->momentum, ch);
        GD_CUDA_CHECK_LAUNCH();
    }
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise batch statistics");
done:
    gd__cuda_scratch_free(ctx, stats);
    return rc;
}

extern "C" int
gd__cuda_repro_instance_norm(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, N_AFFINE, NULL, NULL, err);
}

extern "C" int
gd__cuda_repro_layer_norm(struct gd_op_call *c, struct gd_err *err)
{
    float *mean = c->n_out > 1 && c->out[1] != NULL ? (float *)c->out[1]->data : NULL;
    float *r = c->n_out > 2 && c->out[2] != NULL ? (float *)c->out[2]->data : NULL;
    return normalize(c, N_AFFINE, mean, r, err);
}

extern "C" int
gd__cuda_repro_group_norm(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, N_AFFINE, NULL, NULL, err);
}

extern "C" int
gd__cuda_repro_mean_variance_norm(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, N_MVN, NULL, NULL, err);
}

/* LRN: one thread per output, the window's squares from +0 in channel order */
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
        float s = 0.0f;
        for (int64_t k = lo; k <= hi; k++)
            s = __fadd_rn(s, __fmul_rn(xn[k * inner], xn[k * inner]));
        y[i] = __fdiv_rn(x[i], gd__powf(__fadd_rn(bias, __fmul_rn(alpha_n, s)), beta));
    }
}

extern "C" int
gd__cuda_repro_lrn(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    const struct gd_params *p = c->params;
    int64_t n = x->shape[0], ch = x->shape[1], total = gd_tensor_numel(x);
    int64_t inner = n > 0 && ch > 0 ? total / (n * ch) : 0;
    int rc = 0;
    if (total == 0)
        return 0;
    float alpha_n = (float)p->alpha / (float)p->lrn_size; /* rounded once, as on the CPU */
    lrn_kernel<<<gd__repro_elt_blocks(ctx, total), GD_CUDA_THREADS, 0, ctx->compute>>>(
        (const float *)x->data, (float *)c->out[0]->data, ch, inner, (p->lrn_size - 1) / 2,
        p->lrn_size / 2, (float)p->lrn_bias, alpha_n, (float)p->beta, total);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}
