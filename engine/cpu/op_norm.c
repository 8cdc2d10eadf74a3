/*
 * op_norm.c: the normalizations on the CPU: BatchNormalization (inference and training_mode),
 * LRN, InstanceNormalization, LayerNormalization, MeanVarianceNormalization and
 * GroupNormalization.
 *
 * BatchNormalization folds per channel: a = scale / sqrt(var + eps) and b = bias - mean * a,
 * then y = x * a + b: the form PyTorch's CPU kernel and cuDNN's inference kernels use, so
 * the reference rounds where they do. In training mode mean and var are the batch's own.
 *
 * The statistics of a group of n elements (engine/core/norm_rules.h says which; C order of
 * the reduced axes) are two sequential passes from +0: mean = (sum x) / n, then
 * var = (sum (x - mean)^2) / n, the population variance. Then
 *   Instance-, Layer-, GroupNormalization: r = 1 / sqrt(var + eps),
 *                                          y = ((x - mean) * r) * scale + bias
 *                                          (ONNX LayerNormalization's own steps; Mean and
 *                                          InvStdDev are mean and r)
 *   MeanVarianceNormalization:             y = (x - mean) / (sqrt(var) + 1e-9)
 *   BatchNormalization, training:          the folded form above with the batch's mean and
 *                                          var; running = input * momentum + batch * (1 -
 *                                          momentum)
 *   LRN: s = the sum of x^2 over the window of channels, ascending from +0;
 *        y = x / pow(bias + (alpha / size) * s, beta)
 * Groups (or runs of them, or planes) are the thread pool's tasks; each group's sums are
 * one sequential loop, so neither the thread count nor the machine changes a bit.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../core/norm_rules.h"

/* ---- BatchNormalization ---- */

struct bn_job {
    const real *x, *scale, *bias, *mean, *var;
    real *y, eps;
    int64_t ch, inner, planes, per_task;
};

static void
bn_task(void *arg, int64_t task, int worker)
{
    const struct bn_job *job = arg;
    int64_t end = (task + 1) * job->per_task < job->planes ? (task + 1) * job->per_task
                                                           : job->planes;
    for (int64_t plane = task * job->per_task; plane < end; plane++) {
        int64_t k = plane % job->ch;
        real a = job->scale[k] / R(sqrt)(job->var[k] + job->eps);
        real b = job->bias[k] - job->mean[k] * a;
        const real *xp = job->x + plane * job->inner;
        real *yp = job->y + plane * job->inner;
        for (int64_t j = 0; j < job->inner; j++)
            yp[j] = xp[j] * a + b;
    }
}

/* y = x * a + b per channel, with the given mean and var (inputs, or the batch's). */
static void
bn_apply(struct gd_op_call *c, const real *mean, const real *var)
{
    const struct gd_tensor *xt = c->in[0];
    int64_t n = xt->shape[0], ch = xt->shape[1];
    struct bn_job job = {.x = xt->data, .scale = c->in[1]->data, .bias = c->in[2]->data,
                         .mean = mean, .var = var, .y = c->out[0]->data,
                         .eps = (real)c->params->epsilon, .ch = ch,
                         .inner = n > 0 && ch > 0 ? gd_tensor_numel(xt) / (n * ch) : 0,
                         .planes = n * ch};
    /* about 32K values a task: small planes (7 x 7, or one value) must not cost a task each */
    job.per_task = 32768 / (job.inner > 0 ? job.inner : 1) + 1;
    gd__cpu_parallel(c->ctx, (job.planes + job.per_task - 1) / job.per_task, bn_task, &job);
}

/* ---- the statistics of the groups ---- */

struct stats_job {
    const struct gd_op_call *c;
    struct gd__norm_geom g;
    struct gd__norm_affine scale_at, bias_at;
    const real *x, *scale, *bias;
    real *y, *mean, *r; /* mean and r (or var, for BatchNormalization): one per group */
    real eps;
};

/* mean and population variance of group grp, two sequential passes from +0 */
static void
group_stats(const struct stats_job *job, int64_t grp, real *mean_out, real *var_out)
{
    const struct gd__norm_geom *g = &job->g;
    const real *xg = job->x + gd__norm_group_offset(g, grp);
    real sum = 0;
    if (g->nr == 1 && g->r_stride[0] == 1) {
        for (int64_t j = 0; j < g->len; j++)
            sum += xg[j];
    } else {
        for (int64_t j = 0; j < g->len; j++)
            sum += xg[gd__norm_elem_offset(g, j)];
    }
    real mean = sum / (real)g->len, sq = 0;
    if (g->nr == 1 && g->r_stride[0] == 1) {
        for (int64_t j = 0; j < g->len; j++) {
            real d = xg[j] - mean;
            sq += d * d;
        }
    } else {
        for (int64_t j = 0; j < g->len; j++) {
            real d = xg[gd__norm_elem_offset(g, j)] - mean;
            sq += d * d;
        }
    }
    *mean_out = mean;
    *var_out = sq / (real)g->len;
}

/* Instance-, Layer-, GroupNormalization and MeanVarianceNormalization of one group. */
static void
normalize_task(void *arg, int64_t grp, int worker)
{
    const struct stats_job *job = arg;
    const struct gd__norm_geom *g = &job->g;
    (void)worker;
    real mean, var;
    group_stats(job, grp, &mean, &var);
    int64_t base = gd__norm_group_offset(g, grp);
    const real *xg = job->x + base;
    real *yg = job->y + base;
    if (job->c->node->op == GD_OP_MEAN_VARIANCE_NORM) {
        real t = R(sqrt)(var) + job->eps;
        for (int64_t j = 0; j < g->len; j++) {
            int64_t o = gd__norm_elem_offset(g, j);
            yg[o] = (xg[o] - mean) / t;
        }
        return;
    }
    real r = 1 / R(sqrt)(var + job->eps);
    for (int64_t j = 0; j < g->len; j++) {
        int64_t o = gd__norm_elem_offset(g, j);
        real v = (xg[o] - mean) * r * job->scale[gd__norm_affine_index(&job->scale_at, grp, j)];
        if (job->bias != NULL)
            v = v + job->bias[gd__norm_affine_index(&job->bias_at, grp, j)];
        yg[o] = v;
    }
    if (job->mean != NULL)
        job->mean[grp] = mean;
    if (job->r != NULL)
        job->r[grp] = r;
}

static void
stats_job_init(struct stats_job *job, struct gd_op_call *c)
{
    memset(job, 0, sizeof *job);
    job->c = c;
    gd__norm_setup(c, &job->g, &job->scale_at, &job->bias_at);
    job->x = c->in[0]->data;
    job->y = c->out[0]->data;
    job->eps = (real)c->params->epsilon;
}

static int
normalize(struct gd_op_call *c, struct gd_err *err)
{
    struct stats_job job;
    stats_job_init(&job, c);
    if (c->node->op != GD_OP_MEAN_VARIANCE_NORM) {
        job.scale = c->in[1]->data;
        job.bias = c->n_in > 2 && c->in[2] != NULL ? c->in[2]->data : NULL;
    }
    if (c->node->op == GD_OP_LAYER_NORM) {
        job.mean = c->n_out > 1 && c->out[1] != NULL ? c->out[1]->data : NULL;
        job.r = c->n_out > 2 && c->out[2] != NULL ? c->out[2]->data : NULL;
    }
    if (job.g.len > 0)
        gd__cpu_parallel(c->ctx, job.g.groups, normalize_task, &job);
    (void)err;
    return 0;
}

/* BatchNormalization in training mode: one channel's statistics per task. */
static void
bn_stats_task(void *arg, int64_t ch, int worker)
{
    const struct stats_job *job = arg;
    (void)worker;
    group_stats(job, ch, &job->mean[ch], &job->r[ch]);
}

static int
batch_norm_training(struct gd_op_call *c, struct gd_err *err)
{
    int64_t ch = c->in[0]->shape[1];
    real *stats = malloc((size_t)(2 * (ch > 0 ? ch : 1)) * sizeof *stats);
    if (stats == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for batch statistics");
    struct stats_job job;
    stats_job_init(&job, c);
    job.mean = stats;
    job.r = stats + ch; /* the variance */
    if (job.g.len > 0)
        gd__cpu_parallel(c->ctx, ch, bn_stats_task, &job);
    else /* no elements: 0 / 0, as a mean of nothing */
        for (int64_t k = 0; k < 2 * ch; k++)
            stats[k] = (real)NAN;
    bn_apply(c, job.mean, job.r);
    real m = (real)c->params->momentum, keep = 1 - m;
    for (int o = 1; o < c->n_out; o++) {
        if (c->out[o] == NULL)
            continue;
        const real *in = c->in[o + 2]->data, *batch = o == 1 ? job.mean : job.r;
        real *out = c->out[o]->data;
        for (int64_t k = 0; k < ch; k++)
            out[k] = in[k] * m + batch[k] * keep;
    }
    free(stats);
    return 0;
}

int
CPU_FN(batch_norm)(struct gd_op_call *c, struct gd_err *err)
{
    if (c->params->training_mode)
        return batch_norm_training(c, err);
    bn_apply(c, c->in[3]->data, c->in[4]->data);
    return 0;
}

int
CPU_FN(instance_norm)(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, err);
}

int
CPU_FN(layer_norm)(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, err);
}

int
CPU_FN(mean_variance_norm)(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, err);
}

int
CPU_FN(group_norm)(struct gd_op_call *c, struct gd_err *err)
{
    return normalize(c, err);
}

/* ---- LRN ---- */

struct lrn_job {
    const real *x;
    real *y;
    int64_t n, ch, inner;
    int64_t before, after; /* channels in the window below and above c */
    real bias, alpha_n, beta;
};

/* Plane (n, c): the window's squares summed channel by channel ascending, per position. */
static void
lrn_task(void *arg, int64_t plane, int worker)
{
    const struct lrn_job *job = arg;
    (void)worker;
    int64_t n = plane / job->ch, c = plane % job->ch;
    int64_t lo = c - job->before > 0 ? c - job->before : 0;
    int64_t hi = c + job->after < job->ch - 1 ? c + job->after : job->ch - 1;
    const real *xn = job->x + n * job->ch * job->inner;
    real *yp = job->y + plane * job->inner;
    for (int64_t i = 0; i < job->inner; i++)
        yp[i] = 0;
    for (int64_t k = lo; k <= hi; k++) {
        const real *xk = xn + k * job->inner;
        for (int64_t i = 0; i < job->inner; i++)
            yp[i] += xk[i] * xk[i];
    }
    const real *xc = xn + c * job->inner;
    for (int64_t i = 0; i < job->inner; i++)
        yp[i] = xc[i] / R(pow)(job->bias + job->alpha_n * yp[i], job->beta);
}

int
CPU_FN(lrn)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    const struct gd_params *p = c->params;
    struct lrn_job job = {.x = xt->data, .y = c->out[0]->data, .n = xt->shape[0],
                          .ch = xt->shape[1], .before = (p->lrn_size - 1) / 2,
                          .after = p->lrn_size / 2, .bias = (real)p->lrn_bias,
                          .alpha_n = (real)p->alpha / (real)p->lrn_size, .beta = (real)p->beta};
    job.inner = job.n > 0 && job.ch > 0 ? gd_tensor_numel(xt) / (job.n * job.ch) : 0;
    (void)err;
    gd__cpu_parallel(c->ctx, job.n * job.ch, lrn_task, &job);
    return 0;
}
