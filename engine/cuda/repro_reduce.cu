/*
 * repro_reduce.cu: the float reductions with a sum or a product (ReduceSum, ReduceMean,
 * ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp),
 * GlobalAveragePool, Softmax and LogSoftmax under --repro bitwise: one thread per output
 * element (per row of the softmax), walking its terms in engine/cpu/op_reduce.c's order (C
 * order of the reduced axes) with its roundings and math_rules.h's exp and log; rows that
 * lie along the last axis are streamed through a warp (repro.cuh). Integer reductions and the
 * empty-axes copy are the default kernels' (exact already).
 */
#include "repro.cuh"
#include "repro.h"

#include "../core/math_rules.h"
#include "../core/norm_rules.h"

enum red { R_SUM, R_MEAN, R_PROD, R_L1, R_L2, R_SUM_SQUARE, R_LOG_SUM, R_LOG_SUM_EXP };

/* The running value of one output, fed its terms in order (op_reduce.c's red_float). */
template <int KIND> struct red_acc {
    float acc;
    __device__ red_acc() : acc(KIND == R_PROD ? 1.0f : KIND == R_LOG_SUM_EXP ? -INFINITY : 0.0f)
    {
    }
    __device__ void add(float v)
    {
        switch (KIND) {
        case R_PROD:
            acc = __fmul_rn(acc, v);
            break;
        case R_L1:
            acc = __fadd_rn(acc, gd__fabsf(v));
            break;
        case R_L2:
        case R_SUM_SQUARE:
            acc = __fadd_rn(acc, __fmul_rn(v, v));
            break;
        case R_LOG_SUM_EXP: /* the maximum, the first NaN staying */
            if (!isnan(acc) && (v > acc || isnan(v)))
                acc = v;
            break;
        default:
            acc = __fadd_rn(acc, v);
            break;
        }
    }
    /* the result from the sum (for LogSumExp: s of the second pass, acc the maximum) */
    __device__ float finish(int64_t count, float s) const
    {
        switch (KIND) {
        case R_MEAN:
            return __fdiv_rn(acc, (float)count);
        case R_L2:
            return gd__sqrtf(acc);
        case R_LOG_SUM:
            return gd__logf(acc);
        case R_LOG_SUM_EXP:
            return __fadd_rn(acc, gd__logf(s));
        default:
            return acc;
        }
    }
};

/* One thread per output: group grp of g is the output's terms (norm_rules.h's walk). */
template <int KIND>
static __global__ void
reduce_kernel(const float *__restrict__ x, float *__restrict__ y, gd__norm_geom g)
{
    for (int64_t grp = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; grp < g.groups;
         grp += (int64_t)gridDim.x * blockDim.x) {
        const float *xg = x + gd__norm_group_offset(&g, grp);
        red_acc<KIND> r;
        for (int64_t j = 0; j < g.len; j++)
            r.add(xg[gd__norm_elem_offset(&g, j)]);
        float s = 0.0f;
        if (KIND == R_LOG_SUM_EXP) {
            if (!isfinite(r.acc)) {
                y[grp] = r.acc;
                continue;
            }
            for (int64_t j = 0; j < g.len; j++)
                s = __fadd_rn(s, gd__expf(__fsub_rn(xg[gd__norm_elem_offset(&g, j)], r.acc)));
        }
        y[grp] = r.finish(g.len, s);
    }
}

/* The same when each output's terms are one contiguous row, rows one after another. */
template <int KIND>
static __global__ void
reduce_rows_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t len)
{
    __shared__ gd__repro_tile_t tiles[GD_REPRO_ROW_WARPS];
    gd__repro_tile_t &tile = tiles[threadIdx.x / 32];
    GD_REPRO_FOR_ROWS(row0, rows)
    {
        red_acc<KIND> r;
        gd__repro_rows(x, rows, len, row0, tile, [&](float v) { r.add(v); });
        float s = 0.0f;
        int lane = threadIdx.x & 31, finite = isfinite(r.acc);
        if (KIND == R_LOG_SUM_EXP) {
            float m = r.acc;
            gd__repro_rows(x, rows, len, row0, tile,
                           [&](float v) { s = __fadd_rn(s, gd__expf(__fsub_rn(v, m))); });
        }
        if (row0 + lane < rows)
            y[row0 + lane] = KIND == R_LOG_SUM_EXP && !finite ? r.acc : r.finish(len, s);
    }
}

/* Each output's terms one contiguous row, rows consecutive: the warp-streamed kernel. */
static int
rows_of(const gd__norm_geom &g)
{
    return g.nr == 1 && g.r_stride[0] == 1 && (g.nk == 0 || (g.nk == 1 && g.k_stride[0] == g.len));
}

template <int KIND>
static int
reduce_launch(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *xt = c->in[0];
    int rc = 0;
    unsigned reduced = 0;
    for (int i = 0; i < p->n_axes; i++)
        reduced |= 1u << p->axes[i];
    gd__norm_geom g;
    gd__norm_geom_init(&g, xt->ndim, xt->shape, reduced);
    const float *x = (const float *)xt->data;
    float *y = (float *)c->out[0]->data;
    if (gd_tensor_numel(c->out[0]) == 0)
        return 0;
    if (rows_of(g) && g.len > 0)
        reduce_rows_kernel<KIND>
            <<<gd__repro_row_blocks(ctx, g.groups), 32 * GD_REPRO_ROW_WARPS, 0, ctx->compute>>>(
                x, y, g.groups, g.len);
    else
        reduce_kernel<KIND>
            <<<gd__repro_elt_blocks(ctx, g.groups), GD_CUDA_THREADS, 0, ctx->compute>>>(x, y, g);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}

/* Integer data and the empty-axes copy go to the default kernels: exact already. */
#define REDUCE_ENTRY(fn, kind)                                                                     \
    extern "C" int gd__cuda_repro_##fn(struct gd_op_call *c, struct gd_err *err)                   \
    {                                                                                              \
        if (!gd_dtype_is_float(c->in[0]->dtype) || c->params->n_axes == 0)                         \
            return gd__cuda_##fn(c, err);                                                          \
        return reduce_launch<kind>(c, err);                                                        \
    }

REDUCE_ENTRY(reduce_sum, R_SUM)
REDUCE_ENTRY(reduce_mean, R_MEAN)
REDUCE_ENTRY(reduce_prod, R_PROD)
REDUCE_ENTRY(reduce_l1, R_L1)
REDUCE_ENTRY(reduce_l2, R_L2)
REDUCE_ENTRY(reduce_sum_square, R_SUM_SQUARE)
REDUCE_ENTRY(reduce_log_sum, R_LOG_SUM)
REDUCE_ENTRY(reduce_log_sum_exp, R_LOG_SUM_EXP)

/* GlobalAveragePool: each (n, c) plane summed in C order from +0, one division by its size */
extern "C" int
gd__cuda_repro_global_average_pool(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *xt = c->in[0];
    int64_t planes = xt->shape[0] * xt->shape[1];
    int64_t len = planes > 0 ? gd_tensor_numel(xt) / planes : 0;
    int rc = 0;
    if (planes == 0)
        return 0;
    reduce_rows_kernel<R_MEAN>
        <<<gd__repro_row_blocks(ctx, planes), 32 * GD_REPRO_ROW_WARPS, 0, ctx->compute>>>(
            (const float *)xt->data, (float *)c->out[0]->data, planes, len);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}

/*
 * Softmax and LogSoftmax along the axis (outer x len x inner), op_reduce.c's softmax_common:
 * m = the maximum (a NaN stays), s = sum of exp(x - m) in axis order from +0, then
 * y = exp(x - m) / s or (x - m) - log(s).
 */
struct softmax_row {
    float m, s, log_s;
    int log_form;
    __device__ void max(float v)
    {
        if (v > m || isnan(v))
            m = v;
    }
    __device__ void sum(float v)
    {
        s = __fadd_rn(s, gd__expf(__fsub_rn(v, m)));
    }
    __device__ float out(float v) const
    {
        float d = __fsub_rn(v, m);
        return log_form ? __fsub_rn(d, log_s) : __fdiv_rn(gd__expf(d), s);
    }
};

static __global__ void
softmax_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t outer, int64_t len,
               int64_t inner, int log_form)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < outer * inner;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / inner, i = t % inner;
        const float *xp = x + o * len * inner + i;
        float *yp = y + o * len * inner + i;
        softmax_row r = {-INFINITY, 0.0f, 0.0f, log_form};
        for (int64_t a = 0; a < len; a++)
            r.max(xp[a * inner]);
        for (int64_t a = 0; a < len; a++)
            r.sum(xp[a * inner]);
        r.log_s = gd__logf(r.s);
        for (int64_t a = 0; a < len; a++)
            yp[a * inner] = r.out(xp[a * inner]);
    }
}

static __global__ void
softmax_rows_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t len,
                    int log_form)
{
    __shared__ gd__repro_tile_t tiles[GD_REPRO_ROW_WARPS];
    gd__repro_tile_t &tile = tiles[threadIdx.x / 32];
    GD_REPRO_FOR_ROWS(row0, rows)
    {
        softmax_row r = {-INFINITY, 0.0f, 0.0f, log_form};
        gd__repro_rows(x, rows, len, row0, tile, [&](float v) { r.max(v); });
        gd__repro_rows(x, rows, len, row0, tile, [&](float v) { r.sum(v); });
        r.log_s = gd__logf(r.s);
        gd__repro_rows_map(x, y, rows, len, row0, tile, [&](float v, int64_t) { return r.out(v); });
    }
}

static int
softmax_launch(struct gd_op_call *c, int log_form, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *xt = c->in[0];
    int64_t axis = c->params->axis, outer = 1, inner = 1, len = xt->shape[axis];
    for (int d = 0; d < xt->ndim; d++) {
        if (d < axis)
            outer *= xt->shape[d];
        else if (d > axis)
            inner *= xt->shape[d];
    }
    int rc = 0;
    if (gd_tensor_numel(xt) == 0)
        return 0;
    const float *x = (const float *)xt->data;
    float *y = (float *)c->out[0]->data;
    if (inner == 1)
        softmax_rows_kernel<<<gd__repro_row_blocks(ctx, outer), 32 * GD_REPRO_ROW_WARPS, 0,
                              ctx->compute>>>(x, y, outer, len, log_form);
    else
        softmax_kernel<<<gd__repro_elt_blocks(ctx, outer * inner), GD_CUDA_THREADS, 0,
                         ctx->compute>>>(x, y, outer, len, inner, log_form);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}

extern "C" int
gd__cuda_repro_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_launch(c, 0, err);
}

extern "C" int
gd__cuda_repro_log_softmax(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_launch(c, 1, err);
}
