/*
 * op_norm.c: BatchNormalization (inference) on the CPU.
 *
 * Per channel a = scale / sqrt(var + eps) and b = bias - mean * a, then y = x * a + b: the
 * folded form PyTorch's CPU kernel and cuDNN's inference kernels use, so the reference
 * rounds where they do. Runs of (n, channel) planes are the thread pool's tasks; every
 * plane computes its channel's a and b with the same operations, so they are the same values
 * in every task.
 */
#include "cpu.h"

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

int
CPU_FN(batch_norm)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    int64_t n = xt->shape[0], ch = xt->shape[1];
    struct bn_job job = {.x = xt->data, .scale = c->in[1]->data, .bias = c->in[2]->data,
                         .mean = c->in[3]->data, .var = c->in[4]->data, .y = c->out[0]->data,
                         .eps = (real)c->params->epsilon, .ch = ch,
                         .inner = n > 0 && ch > 0 ? gd_tensor_numel(xt) / (n * ch) : 0,
                         .planes = n * ch};
    /* about 32K values a task: small planes (7 x 7, or one value) must not cost a task each */
    job.per_task = 32768 / (job.inner > 0 ? job.inner : 1) + 1;
    gd__cpu_parallel(c->ctx, (job.planes + job.per_task - 1) / job.per_task, bn_task, &job);
    return 0;
}
