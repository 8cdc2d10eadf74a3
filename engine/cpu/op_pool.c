/*
 * op_pool.c: MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the CPU.
 *
 * Windows are walked depth by depth (3-D), row by row, column by column; 1-D and 2-D pools
 * are 3-D ones of depth (and height) 1. MaxPool propagates NaN (once a NaN is
 * seen it stays), as PyTorch and cuDNN's NaN-propagating mode do. AveragePool sums in that
 * order and divides once: by the window's element count inside the input, or with
 * count_include_pad by its count inside the padded input. Runs of (n, c) planes are the
 * thread pool's tasks; a MaxPool plane without NaN takes a loop that vectorizes across outputs
 * (max_plane_fast), visiting each output's taps in the same order.
 */
#include "cpu.h"
#include "../core/index_rules.h"

/* A pooling op's planes (an (n, c) volume of D x H x W values): what the tasks share. */
struct pool_job {
    const struct gd_params *p;
    struct gd__ncdhw xg, yg;
    const real *x;
    real *y;
    int64_t *indices; /* MaxPool's optional Indices output, or NULL */
    void (*plane)(const struct pool_job *job, int64_t nc);
    int64_t per_task; /* planes per task */
};

static void
pool_task(void *arg, int64_t task, int worker)
{
    const struct pool_job *job = arg;
    int64_t planes = job->xg.n * job->xg.c;
    int64_t end = (task + 1) * job->per_task < planes ? (task + 1) * job->per_task : planes;
    for (int64_t nc = task * job->per_task; nc < end; nc++)
        job->plane(job, nc);
}

/* Runs plane() over every (n, c) plane, about 32K input values a task. */
static void
pool_run(struct gd_op_call *c, void (*plane)(const struct pool_job *job, int64_t nc))
{
    struct pool_job job = {.p = c->params, .xg = gd__ncdhw_of(c->in[0]),
                           .yg = gd__ncdhw_of(c->out[0]), .x = c->in[0]->data,
                           .y = c->out[0]->data, .plane = plane,
                           .indices = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL};
    int64_t in_len = job.xg.d * job.xg.h * job.xg.w;
    job.per_task = 32768 / (in_len > 0 ? in_len : 1) + 1;
    int64_t planes = job.xg.n * job.xg.c;
    gd__cpu_parallel(c->ctx, (planes + job.per_task - 1) / job.per_task, pool_task, &job);
}

/* The taps of output o along spatial axis a (0 depth, 1 height, 2 width) inside the input. */
static void
taps(const struct gd_params *p, int a, int64_t o, int64_t in, int64_t *lo, int64_t *hi)
{
    gd__window_taps(o, p->strides[a], p->dilations[a], p->kernel[a], p->pads[a], in, lo, hi);
}

/* Where output o's window starts along axis a (in the unpadded input's coordinates). */
static int64_t
window_start(const struct gd_params *p, int a, int64_t o)
{
    return o * p->strides[a] - p->pads[a];
}

/*
 * MaxPool as first written: the order, and the NaN rule, that the fast loop matches. A NaN,
 * once seen, ends the window's row; later rows are still visited, and a NaN in one of them
 * replaces the first (so a NaN's payload is that of the last row holding one). With ip,
 * each output's Indices entry is where the kept value came from: the input element that
 * last replaced m, or the window's first element when none did (a window of -inf), as a
 * position in the whole flattened input (plane offset base), within the plane in row-major
 * order (storage_order 0) or column-major order (1: the first spatial axis fastest).
 */
static void
max_plane_scalar(const struct pool_job *job, const real *xp, real *yp, int64_t *ip, int64_t base)
{
    const struct gd_params *p = job->p;
    struct gd__ncdhw xg = job->xg, yg = job->yg;
    for (int64_t od = 0; od < yg.d; od++) {
        int64_t kd0, kd1;
        taps(p, 0, od, xg.d, &kd0, &kd1);
        for (int64_t oh = 0; oh < yg.h; oh++) {
            int64_t kh0, kh1;
            taps(p, 1, oh, xg.h, &kh0, &kh1);
            for (int64_t ow = 0; ow < yg.w; ow++) {
                int64_t kw0, kw1;
                taps(p, 2, ow, xg.w, &kw0, &kw1);
                real m = -INFINITY;
                int64_t at = -1, first = -1;
                for (int64_t kz = kd0; kz < kd1; kz++) {
                    int64_t id = window_start(p, 0, od) + kz * p->dilations[0];
                    for (int64_t ki = kh0; ki < kh1; ki++) {
                        int64_t ih = window_start(p, 1, oh) + ki * p->dilations[1];
                        const real *row = xp + (id * xg.h + ih) * xg.w;
                        for (int64_t kj = kw0; kj < kw1; kj++) {
                            int64_t iw = window_start(p, 2, ow) + kj * p->dilations[2];
                            real v = row[iw];
                            if (ip != NULL && first < 0)
                                first = at = (id * xg.h + ih) * xg.w + iw;
                            if (v > m || isnan(v)) {
                                m = v;
                                at = (id * xg.h + ih) * xg.w + iw;
                            }
                            if (isnan(m))
                                break;
                        }
                    }
                }
                int64_t o = (od * yg.h + oh) * yg.w + ow;
                yp[o] = m;
                if (ip != NULL && at >= 0 && p->storage_order == 1) {
                    int64_t iw = at % xg.w, ih = at / xg.w % xg.h, id = at / (xg.w * xg.h);
                    at = (iw * xg.h + ih) * xg.d + id;
                }
                if (ip != NULL)
                    ip[o] = at >= 0 ? base + at : -1;
            }
        }
    }
}

/*
 * MaxPool over a plane without NaN: the NaN rule never fires, and each output is
 * m = v > m ? v : m over its window's taps, depth, rows, then columns, from -inf (so of two
 * equal zeros the first stays). The loops run a whole output row per tap, which vectorizes
 * across outputs; each output still sees its taps in the same order.
 */
static void
max_plane_fast(const struct pool_job *job, const real *xp, real *yp)
{
    const struct gd_params *p = job->p;
    struct gd__ncdhw xg = job->xg, yg = job->yg;
    int64_t sw = p->strides[2], kw = p->kernel[2];
    int64_t lo[kw], hi[kw];
    for (int64_t kj = 0; kj < kw; kj++)
        gd__tap_range(yg.w, sw, kj * p->dilations[2] - p->pads[2], xg.w, &lo[kj], &hi[kj]);
    for (int64_t od = 0; od < yg.d; od++) {
        int64_t kd0, kd1;
        taps(p, 0, od, xg.d, &kd0, &kd1);
        for (int64_t oh = 0; oh < yg.h; oh++) {
            real *yr = yp + (od * yg.h + oh) * yg.w;
            for (int64_t ow = 0; ow < yg.w; ow++)
                yr[ow] = -INFINITY;
            int64_t kh0, kh1;
            taps(p, 1, oh, xg.h, &kh0, &kh1);
            for (int64_t kz = kd0; kz < kd1; kz++) {
                int64_t id = window_start(p, 0, od) + kz * p->dilations[0];
                for (int64_t ki = kh0; ki < kh1; ki++) {
                    int64_t ih = window_start(p, 1, oh) + ki * p->dilations[1];
                    const real *xr = xp + (id * xg.h + ih) * xg.w;
                    for (int64_t kj = 0; kj < kw; kj++) {
                        const real *xs = xr + kj * p->dilations[2] - p->pads[2];
                        /* constant strides, so the compiler can vectorize the strided reads */
                        if (sw == 1) {
                            for (int64_t ow = lo[kj]; ow < hi[kj]; ow++)
                                yr[ow] = xs[ow] > yr[ow] ? xs[ow] : yr[ow];
                        } else if (sw == 2) {
                            for (int64_t ow = lo[kj]; ow < hi[kj]; ow++)
                                yr[ow] = xs[2 * ow] > yr[ow] ? xs[2 * ow] : yr[ow];
                        } else {
                            for (int64_t ow = lo[kj]; ow < hi[kj]; ow++)
                                yr[ow] = xs[ow * sw] > yr[ow] ? xs[ow * sw] : yr[ow];
                        }
                    }
                }
            }
        }
    }
}

static void
max_pool_plane(const struct pool_job *job, int64_t nc)
{
    int64_t in_len = job->xg.d * job->xg.h * job->xg.w;
    int64_t out_len = job->yg.d * job->yg.h * job->yg.w;
    const real *xp = job->x + nc * in_len;
    real *yp = job->y + nc * out_len;
    int has_nan = 0;
    for (int64_t i = 0; i < in_len; i++)
        has_nan |= isnan(xp[i]) != 0;
    if (job->indices != NULL)
        max_plane_scalar(job, xp, yp, job->indices + nc * out_len, nc * in_len);
    else if (has_nan)
        max_plane_scalar(job, xp, yp, NULL, 0);
    else
        max_plane_fast(job, xp, yp);
}

int
CPU_FN(max_pool)(struct gd_op_call *c, struct gd_err *err)
{
    pool_run(c, max_pool_plane);
    return 0;
}

/* The divisor of output o along axis a with count_include_pad: its taps in the padded input. */
static int64_t
padded_count(const struct gd_params *p, int a, int64_t o, int64_t in)
{
    return gd__window_padded_count(o, p->strides[a], p->kernel[a], p->pads[a],
                                   p->pads[a + GD_MAX_SPATIAL], in);
}

/* AveragePool of one (n, c) plane: depth, rows, columns from +0, one division. */
static void
average_pool_plane(const struct pool_job *job, int64_t nc)
{
    const struct gd_params *p = job->p;
    struct gd__ncdhw xg = job->xg, yg = job->yg;
    const real *xp = job->x + nc * xg.d * xg.h * xg.w;
    real *yp = job->y + nc * yg.d * yg.h * yg.w;
    for (int64_t od = 0; od < yg.d; od++) {
        int64_t kd0, kd1;
        taps(p, 0, od, xg.d, &kd0, &kd1);
        for (int64_t oh = 0; oh < yg.h; oh++) {
            int64_t kh0, kh1;
            taps(p, 1, oh, xg.h, &kh0, &kh1);
            for (int64_t ow = 0; ow < yg.w; ow++) {
                int64_t kw0, kw1;
                taps(p, 2, ow, xg.w, &kw0, &kw1);
                real sum = 0;
                for (int64_t kz = kd0; kz < kd1; kz++) {
                    int64_t id = window_start(p, 0, od) + kz;
                    for (int64_t ki = kh0; ki < kh1; ki++) {
                        const real *row = xp + (id * xg.h + window_start(p, 1, oh) + ki) * xg.w;
                        for (int64_t kj = kw0; kj < kw1; kj++)
                            sum += row[window_start(p, 2, ow) + kj];
                    }
                }
                int64_t count = (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0);
                if (p->count_include_pad)
                    count = padded_count(p, 0, od, xg.d) * padded_count(p, 1, oh, xg.h) *
                            padded_count(p, 2, ow, xg.w);
                yp[(od * yg.h + oh) * yg.w + ow] = sum / (real)count;
            }
        }
    }
}

int
CPU_FN(average_pool)(struct gd_op_call *c, struct gd_err *err)
{
    pool_run(c, average_pool_plane);
    return 0;
}

/* GlobalAveragePool: planes of len values, a task per block of them. */
struct gap_job {
    const real *x;
    real *y;
    int64_t planes, len, per_task;
};

static void
global_average_pool_task(void *arg, int64_t task, int worker)
{
    const struct gap_job *job = arg;
    int64_t end = (task + 1) * job->per_task < job->planes ? (task + 1) * job->per_task
                                                           : job->planes;
    for (int64_t i = task * job->per_task; i < end; i++) {
        real sum = 0;
        for (int64_t k = 0; k < job->len; k++)
            sum += job->x[i * job->len + k];
        job->y[i] = sum / (real)job->len;
    }
}

int
CPU_FN(global_average_pool)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    struct gap_job job = {.x = xt->data, .y = c->out[0]->data,
                          .planes = xt->shape[0] * xt->shape[1]};
    job.len = job.planes > 0 ? gd_tensor_numel(xt) / job.planes : 0;
    /* about 64K values a task, so that small planes do not cost a task each */
    job.per_task = job.len > 0 ? 65536 / job.len + 1 : job.planes + 1;
    gd__cpu_parallel(c->ctx, (job.planes + job.per_task - 1) / job.per_task,
                     global_average_pool_task, &job);
    return 0;
}

/*
 * GlobalMaxPool: each (n, c) plane from -inf in C order, taking a greater value or a NaN
 * and stopping at the first NaN (the ReduceMax rule): of equal values the first stays.
 */
static void
global_max_pool_task(void *arg, int64_t task, int worker)
{
    const struct gap_job *job = arg;
    int64_t end = (task + 1) * job->per_task < job->planes ? (task + 1) * job->per_task
                                                           : job->planes;
    for (int64_t i = task * job->per_task; i < end; i++) {
        real m = -INFINITY;
        const real *xp = job->x + i * job->len;
        for (int64_t k = 0; k < job->len; k++) {
            if (xp[k] > m || isnan(xp[k]))
                m = xp[k];
            if (isnan(m))
                break;
        }
        job->y[i] = m;
    }
}

int
CPU_FN(global_max_pool)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *xt = c->in[0];
    struct gap_job job = {.x = xt->data, .y = c->out[0]->data,
                          .planes = xt->shape[0] * xt->shape[1]};
    job.len = job.planes > 0 ? gd_tensor_numel(xt) / job.planes : 0;
    job.per_task = job.len > 0 ? 65536 / job.len + 1 : job.planes + 1;
    gd__cpu_parallel(c->ctx, (job.planes + job.per_task - 1) / job.per_task,
                     global_max_pool_task, &job);
    return 0;
}
