/*
 * op_loss.cu: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the GPU, mirroring
 * engine/cpu/op_loss.c: the log-softmax one thread per position with the CPU's loop (expf
 * and logf are CUDA's), the loss terms l_i = -(w_t lp) one thread per position, and the
 * sum and mean by a fixed tree of 256 threads (thread t adds terms t, t + 256, ... from +0,
 * then halves pairwise), like ReduceSum's: the grouping depends on the term count alone.
 * docs/CUDA_KERNELS.md states the difference to the CPU's sequential sum. No atomics.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "index.cuh"

#define LOSS_THREADS 256

static __global__ void
log_softmax_kernel(const float *x, float *lp, int64_t positions, int64_t classes, int64_t d)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < positions; p += step) {
        const float *xp = x + p / d * classes * d + p % d;
        float *lq = lp + p / d * classes * d + p % d;
        float m = -INFINITY;
        for (int64_t a = 0; a < classes; a++)
            if (xp[a * d] > m || isnan(xp[a * d]))
                m = xp[a * d];
        float s = 0.0f;
        for (int64_t a = 0; a < classes; a++)
            s = __fadd_rn(s, expf(__fsub_rn(xp[a * d], m)));
        float log_s = logf(s);
        for (int64_t a = 0; a < classes; a++)
            lq[a * d] = __fsub_rn(__fsub_rn(xp[a * d], m), log_s);
    }
}

/* Per position: the loss term, its weight and whether it counts (0 when ignored). */
static __global__ void
terms_kernel(const float *lp, const void *target, int is32, const float *w, int64_t positions,
             int64_t classes, int64_t d, int has_ignore, int64_t ignore, float *loss,
             float *weight, int *counted)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < positions; i += step) {
        int64_t t = gd__cuda_index_at(target, is32, i);
        bool ignored = (has_ignore && t == ignore) || t < 0 || t >= classes;
        float wi = ignored ? 0.0f : (w != NULL ? w[t] : 1.0f);
        loss[i] = ignored ? 0.0f : -__fmul_rn(wi, lp[(i / d * classes + t) * d + i % d]);
        if (weight != NULL) {
            weight[i] = wi;
            counted[i] = !ignored;
        }
    }
}

/* One block: y = sum of loss (reduction sum) or that over the sum of weights / the count. */
static __global__ void
reduce_kernel(const float *loss, const float *weight, const int *counted, int64_t n, int mean,
              int has_weight, float *y)
{
    __shared__ float ls[LOSS_THREADS], ws[LOSS_THREADS];
    __shared__ long long cs[LOSS_THREADS];
    int t = threadIdx.x;
    float l = 0.0f, w = 0.0f;
    long long cnt = 0;
    for (int64_t i = t; i < n; i += LOSS_THREADS) {
        l = __fadd_rn(l, loss[i]);
        if (mean) {
            w = __fadd_rn(w, weight[i]);
            cnt += counted[i];
        }
    }
    ls[t] = l;
    ws[t] = w;
    cs[t] = cnt;
    __syncthreads();
    for (int s = LOSS_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            ls[t] = __fadd_rn(ls[t], ls[t + s]);
            ws[t] = __fadd_rn(ws[t], ws[t + s]);
            cs[t] += cs[t + s];
        }
        __syncthreads();
    }
    if (t == 0)
        *y = mean ? __fdiv_rn(ls[0], has_weight ? ws[0] : (float)cs[0]) : ls[0];
}

static int
loss_run(struct gd_op_call *c, const float *lp, struct gd_err *err)
{
    struct gd__cuda_ctx *ctx = gd__cuda_ctx_of(c);
    const struct gd_params *p = c->params;
    const struct gd_tensor *x = c->in[0], *t = c->in[1];
    const struct gd_tensor *wt = c->n_in > 2 ? c->in[2] : NULL;
    int64_t n = x->shape[0], classes = x->shape[1], positions = gd_tensor_numel(t);
    int64_t d = n > 0 ? positions / n : 1;
    int mean = p->loss_reduction == GD_LOSS_MEAN, rc = 0;
    float *loss = NULL, *weight = NULL;
    int *counted = NULL;
    size_t cells = (size_t)(positions > 0 ? positions : 1);
    if (p->loss_reduction == GD_LOSS_NONE) {
        if (positions == 0)
            return 0;
        terms_kernel<<<gd__cuda_blocks(positions), GD_CUDA_THREADS, 0, ctx->compute>>>(
            lp, t->data, t->dtype == GD_I32, wt ? (const float *)wt->data : NULL, positions,
            classes, d, p->has_ignore_index, p->ignore_index, (float *)c->out[0]->data, NULL,
            NULL);
        GD_CUDA_CHECK_LAUNCH();
        return 0;
    }
    rc = gd__cuda_scratch(ctx, cells * sizeof *loss, (void **)&loss, err);
    if (rc == 0 && mean)
        rc = gd__cuda_scratch(ctx, cells * sizeof *weight, (void **)&weight, err);
    if (rc == 0 && mean)
        rc = gd__cuda_scratch(ctx, cells * sizeof *counted, (void **)&counted, err);
    if (rc != 0)
        goto done;
    if (positions > 0) {
        terms_kernel<<<gd__cuda_blocks(positions), GD_CUDA_THREADS, 0, ctx->compute>>>(
            lp, t->data, t->dtype == GD_I32, wt ? (const float *)wt->data : NULL, positions,
            classes, d, p->has_ignore_index, p->ignore_index, loss, weight, counted);
        GD_CUDA_CHECK_LAUNCH();
    }
    reduce_kernel<<<1, LOSS_THREADS, 0, ctx->compute>>>(loss, weight, counted, positions, mean,
                                                        wt != NULL, (float *)c->out[0]->data);
    GD_CUDA_CHECK_LAUNCH();
    snprintf(c->algo, sizeof c->algo, "tree256");
done:
    gd__cuda_scratch_free(ctx, loss);
    gd__cuda_scratch_free(ctx, weight);
    gd__cuda_scratch_free(ctx, counted);
    return rc;
}

/* Targets must be classes or the ignore_index (checked at load when they are a weight). */
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
gd__cuda_nll_loss(struct gd_op_call *c, struct gd_err *err)
{
    if (c->in[0]->dtype != GD_F32)
        return gd_err_set(err, GD_EDTYPE, "NegativeLogLikelihoodLoss of %s on cuda",
                          gd_dtype_name(c->in[0]->dtype));
    int rc = check_targets(c, err);
    return rc != 0 ? rc : loss_run(c, (const float *)c->in[0]->data, err);
}

extern "C" int
gd__cuda_sce_loss(struct gd_op_call *c, struct gd_err *err)
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
    rc = check_targets(c, err);
    if (rc != 0)
        return rc;
    if (c->n_out > 1)
        lp = (float *)c->out[1]->data;
    else if ((rc = gd__cuda_scratch(ctx, gd_tensor_nbytes(x), (void **)&lp, err)) != 0)
        return rc;
    if (n * d > 0 && classes > 0) {
        log_softmax_kernel<<<gd__cuda_blocks(n * d), GD_CUDA_THREADS, 0, ctx->compute>>>(
            (const float *)x->data, lp, n * d, classes, d);
        GD_CUDA_CHECK_LAUNCH();
    }
    rc = loss_run(c, lp, err);
done:
    if (c->n_out < 2)
        gd__cuda_scratch_free(ctx, lp);
    return rc;
}
