/*
 * repro_loss.cu: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss under --repro bitwise,
 * engine/cpu/op_loss.c's arithmetic: the log-softmax per position with math_rules.h's exp
 * and log, the terms l_i = -(w_t lp) one thread per position, and for sum and mean one
 * thread adding the terms (and the weights) from +0 for i ascending, ignored positions
 * skipped, then one division: the CPU's sequential sums, not the default mode's tree.
 */
#include <math.h>
#include <stdio.h>

#include "index.cuh"
#include "repro.cuh"
#include "repro.h"

#include "../core/math_rules.h"

static __global__ void
log_softmax_kernel(const float *x, float *lp, int64_t positions, int64_t classes, int64_t d)
{
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < positions;
         p += (int64_t)gridDim.x * blockDim.x) {
        const float *xp = x + p / d * classes * d + p % d;
        float *lq = lp + p / d * classes * d + p % d;
        float m = -INFINITY;
        for (int64_t a = 0; a < classes; a++)
            if (xp[a * d] > m || isnan(xp[a * d]))
                m = xp[a * d];
        float s = 0.0f;
        for (int64_t a = 0; a < classes; a++)
            s = __fadd_rn(s, gd__expf(__fsub_rn(xp[a * d], m)));
        float log_s = gd__logf(s);
        for (int64_t a = 0; a < classes; a++)
            lq[a * d] = __fsub_rn(__fsub_rn(xp[a * d], m), log_s);
    }
}

struct loss_args {
    const float *lp, *w;
    const void *target;
    int is32, has_ignore;
    int64_t ignore, positions, classes, d;
};

static __device__ __forceinline__ int
ignored_at(const loss_args &a, int64_t t)
{
    return a.has_ignore && t == a.ignore;
}

/* reduction none: y[i] = -(w_t lp[n, t, d]), 0 where ignored */
static __global__ void
terms_kernel(loss_args a, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.positions;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = gd__cuda_index_at(a.target, a.is32, i);
        float l = 0.0f;
        if (!ignored_at(a, t)) {
            float wi = a.w != NULL ? a.w[t] : 1.0f;
            l = -__fmul_rn(wi, a.lp[(i / a.d * a.classes + t) * a.d + i % a.d]);
        }
        y[i] = l;
    }
}

/* sum and mean: one thread, the CPU's loop */
static __global__ void
sum_kernel(loss_args a, int mean, float *y)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    float sum = 0.0f, wsum = 0.0f;
    int64_t count = 0;
    for (int64_t i = 0; i < a.positions; i++) {
        int64_t t = gd__cuda_index_at(a.target, a.is32, i);
        if (ignored_at(a, t))
            continue;
        float wi = a.w != NULL ? a.w[t] : 1.0f;
        sum = __fadd_rn(sum, -__fmul_rn(wi, a.lp[(i / a.d * a.classes + t) * a.d + i % a.d]));
        wsum = __fadd_rn(wsum, wi);
        count++;
    }
    *y = mean ? __fdiv_rn(sum, a.w != NULL ? wsum : (float)count) : sum;
}

static int
loss_run(struct gd_op_call *c, const float *lp, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *x = c->in[0], *t = c->in[1];
    const struct gd_tensor *wt = c->n_in > 2 ? c->in[2] : NULL;
    int64_t n = x->shape[0], positions = gd_tensor_numel(t);
    loss_args a = {lp,
                   wt != NULL ? (const float *)wt->data : NULL,
                   t->data,
                   t->dtype == GD_I32,
                   p->has_ignore_index,
                   p->ignore_index,
                   positions,
                   x->shape[1],
                   n > 0 ? positions / n : 1};
    int rc = 0;
    if (p->loss_reduction == GD_LOSS_NONE) {
        if (positions > 0) {
            terms_kernel<<<gd__repro_elt_blocks(ctx, positions), GD_CUDA_THREADS, 0,
                           ctx->compute>>>(a, (float *)c->out[0]->data);
            GD_CUDA_CHECK_LAUNCH();
        }
    } else {
        sum_kernel<<<1, 32, 0, ctx->compute>>>(a, p->loss_reduction == GD_LOSS_MEAN,
                                               (float *)c->out[0]->data);
        GD_CUDA_CHECK_LAUNCH();
    }
    snprintf(c->algo, sizeof c->algo, "gpudiff bitwise sequential");
done:
    return rc;
}

static int
check_targets(struct gd_op_call *c, struct gd_err *err)
{
    gd__cuda_index_rule rule = {};
    rule.period = 1;
    rule.lo[0] = 0;
    rule.hi[0] = c->in[0]->shape[1];
    rule.has_special = c->params->has_ignore_index;
    rule.special = c->params->ignore_index;
    return gd__cuda_check_indices(c, 1, &rule, "target", err);
}

extern "C" int
gd__cuda_repro_nll_loss(struct gd_op_call *c, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_F32)
        return gd_err_set(err, GD_EDTYPE, "NegativeLogLikelihoodLoss of %s on cuda",
                          gd_dtype_name(c->in[0]->dtype));
    int rc = check_targets(c, err);
    return rc != 0 ? rc : loss_run(c, (const float *)c->in[0]->data, err);
}

extern "C" int
gd__cuda_repro_sce_loss(struct gd_op_call *c, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], classes = x->shape[1];
    int64_t d = n * classes > 0 ? gd_tensor_numel(x) / (n * classes) : 1;
    float *lp = NULL;
    int rc = 0;
    if (x->dtype != GD_F32)
        return gd_err_set(err, GD_EDTYPE, "SoftmaxCrossEntropyLoss of %s on cuda",
                          gd_dtype_name(x->dtype));
    if ((rc = check_targets(c, err)) != 0)
        return rc;
    if (c->n_out > 1)
        lp = (float *)c->out[1]->data;
    else if ((rc = gd__cuda_scratch(ctx, gd_tensor_nbytes(x), (void **)&lp, err)) != 0)
        return rc;
    if (n * d > 0 && classes > 0) {
        log_softmax_kernel<<<gd__repro_elt_blocks(ctx, n * d), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)x->data, lp, n * d, classes, d);
        GD_CUDA_CHECK_LAUNCH();
    }
    rc = loss_run(c, lp, err);
done:
    if (c->n_out < 2)
        gd__cuda_scratch_free(ctx, lp);
    return rc;
}
