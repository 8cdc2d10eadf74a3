/*
 * op_resize.c: Resize and Upsample on the CPU, from the taps and weights of
 * engine/core/resize_rules.c (exact source coordinates, weights rounded once to `real`).
 *
 * Per output element: nearest copies the one input element its taps name; linear and cubic
 * sum, from +0, over the combinations of the resized axes' taps in C order (the first
 * resized axis's taps outermost), the terms (((w_0 w_1) w_2) ...) x, each product and sum
 * rounded once; a term whose weight is 0 is skipped (an exact sample reads only that
 * sample, so a neighbor's NaN or infinity does not leak into it). With tf_crop_and_resize an
 * output whose coordinate falls outside the input is extrapolation_value. Blocks of output
 * elements are the thread pool's tasks; each element is one sequential sum, so the bits do
 * not depend on the thread count. The CUDA kernel runs the same loop with the same float
 * weights, so it gives these bits (engine/cuda/op_resize.cu).
 */
#include <string.h>

#include "cpu.h"
#include "../core/resize_rules.h"

#define PER_TASK 4096

struct resize_job {
    const struct gd__resize_plan *plan;
    const real *x;
    real *y;
    int ndim;
    int64_t in_stride[GD_MAX_DIMS], out_shape[GD_MAX_DIMS];
    unsigned resized;
    int64_t n;
    real extrap;
    int nearest;
};

static void
resize_task(void *arg, int64_t task, int worker)
{
    const struct resize_job *job = arg;
    const struct gd__resize_plan *plan = job->plan;
    int taps = plan->taps, d = plan->n_axes;
    (void)worker;
    int64_t end = (task + 1) * PER_TASK < job->n ? (task + 1) * PER_TASK : job->n;
    for (int64_t i = task * PER_TASK; i < end; i++) {
        /* the output's coordinates: the kept axes give the input offset directly */
        int64_t rest = i, base = 0, o[GD_MAX_DIMS];
        for (int a = job->ndim - 1; a >= 0; a--) {
            int64_t c = rest % job->out_shape[a];
            rest /= job->out_shape[a];
            o[a] = c;
            if (!(job->resized & (1u << a)))
                base += c * job->in_stride[a];
        }
        const int64_t *idx[GD_MAX_DIMS];
        const real *w[GD_MAX_DIMS];
        int outside = 0;
        for (int k = 0; k < d; k++) {
            const struct gd__resize_axis *ax = &plan->axis[k];
            idx[k] = ax->index + o[ax->axis] * taps;
#if GD_CPU_F64
            w[k] = ax->weight64 != NULL ? ax->weight64 + o[ax->axis] * taps : NULL;
#else
            w[k] = ax->weight32 != NULL ? ax->weight32 + o[ax->axis] * taps : NULL;
#endif
            outside |= idx[k][0] < 0;
        }
        if (outside) {
            job->y[i] = job->extrap;
            continue;
        }
        if (job->nearest) {
            int64_t off = base;
            for (int k = 0; k < d; k++)
                off += idx[k][0] * job->in_stride[plan->axis[k].axis];
            job->y[i] = job->x[off];
            continue;
        }
        /* every combination t of taps, C order: t[d - 1] fastest */
        int t[GD_MAX_DIMS] = {0};
        real sum = 0;
        for (;;) {
            real wt = w[0][t[0]];
            int64_t off = base + idx[0][t[0]] * job->in_stride[plan->axis[0].axis];
            for (int k = 1; k < d; k++) {
                wt = wt * w[k][t[k]];
                off += idx[k][t[k]] * job->in_stride[plan->axis[k].axis];
            }
            if (wt != 0)
                sum += wt * job->x[off];
            int k = d - 1;
            while (k >= 0 && ++t[k] == taps)
                t[k--] = 0;
            if (k < 0)
                break;
        }
        job->y[i] = sum;
    }
}

static int
resize_run(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    struct gd_tensor *yt = c->out[0];
    struct gd__resize_plan plan;
    int rc = gd__resize_plan_make(c->params, xt->ndim, xt->shape, yt->shape, &plan, err);
    if (rc != 0)
        return rc;
    struct resize_job job = {.plan = &plan, .x = xt->data, .y = yt->data, .ndim = xt->ndim,
                             .resized = c->params->resized_axes, .n = gd_tensor_numel(yt),
                             .extrap = (real)c->params->extrapolation_value,
                             .nearest = c->params->resize_mode == GD_RESIZE_NEAREST};
    int64_t s = 1;
    for (int a = xt->ndim - 1; a >= 0; a--) {
        job.in_stride[a] = s;
        job.out_shape[a] = yt->shape[a];
        s *= xt->shape[a];
    }
    if (plan.n_axes == 0) { /* every axis is the identity: a copy */
        memcpy(job.y, job.x, (size_t)job.n * sizeof *job.y);
    } else {
        gd__cpu_parallel(c->ctx, (job.n + PER_TASK - 1) / PER_TASK, resize_task, &job);
    }
    gd__resize_plan_free(&plan);
    return 0;
}

int
CPU_FN(resize)(struct gd_op_call *c, struct gd_err *err)
{
    return resize_run(c, err);
}

int
CPU_FN(upsample)(struct gd_op_call *c, struct gd_err *err)
{
    return resize_run(c, err);
}
