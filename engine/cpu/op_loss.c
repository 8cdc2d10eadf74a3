/*
 * op_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the CPU.
 *
 * Scores (N, C, d1..dk) are read as (N, C, D), D = d1 ... dk, targets as (N, D). Position
 * i = n D + d (C order of the targets) has the loss l_i = -(w_t x[n, t, d]) with t its
 * target and w_t the class's weight (1 without weights), or l_i = 0 and w_i = 0 when t is
 * the ignore_index. SoftmaxCrossEntropyLoss takes x as the log-softmax over C, computed per
 * position as LogSoftmax does: m the maximum, s the sum of exp(x_c - m) for c ascending from
 * +0, lp_c = (x_c - m) - log(s).
 *
 * Summation order (docs/NUMERICS.md): sum adds l_i from +0 for i ascending, skipping ignored
 * positions; mean divides that sum once by the sum of the w_i in the same order (with no
 * weight input, by the count of positions not ignored, an integer converted once). A mean
 * over no position is 0 / 0, NaN, as numpy's reference gives.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cpu.h"

static int64_t
target_at(const struct gd_tensor *t, int64_t i)
{
    return t->dtype == GD_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/* Checks every target: a class, or the ignore_index. */
static int
check_targets(const struct gd_tensor *t, int64_t classes, const struct gd_params *p,
              struct gd_err *err)
{
    int64_t n = gd_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = target_at(t, i);
        if ((v < 0 || v >= classes) && !(p->has_ignore_index && v == p->ignore_index))
            return gd_err_set(err, GD_ERANGE, "target %lld (element %lld) is not a class of "
                              "%lld%s", (long long)v, (long long)i, (long long)classes,
                              p->has_ignore_index ? " nor the ignore_index" : "");
    }
    return 0;
}

/*
 * The loss from per-class log-probabilities lp (N, C, D): per position into y (none), or
 * reduced into y[0].
 */
static void
loss_from(const struct gd_op_call *c, const real *lp)
{
    const struct gd_params *p = c->params;
    const struct gd_tensor *x = c->in[0], *t = c->in[1];
    const struct gd_tensor *wt = c->n_in > 2 ? c->in[2] : NULL;
    const real *w = wt != NULL ? wt->data : NULL;
    real *y = c->out[0]->data;
    int64_t n = x->shape[0], classes = x->shape[1], d = gd_tensor_numel(t) / (n > 0 ? n : 1);
    real sum = 0, wsum = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < n * d; i++) {
        int64_t tgt = target_at(t, i);
        real l = 0;
        int ignored = p->has_ignore_index && tgt == p->ignore_index;
        if (!ignored) {
            real wi = w != NULL ? w[tgt] : 1;
            l = -(wi * lp[((i / d) * classes + tgt) * d + i % d]);
            sum += l;
            wsum += wi;
            count++;
        }
        if (p->loss_reduction == GD_LOSS_NONE)
            y[i] = l;
    }
    if (p->loss_reduction == GD_LOSS_SUM)
        y[0] = sum;
    else if (p->loss_reduction == GD_LOSS_MEAN)
        y[0] = sum / (w != NULL ? wsum : (real)count);
}

int
CPU_FN(nll_loss)(struct gd_op_call *c, struct gd_err *err)
{
    int rc = check_targets(c->in[1], c->in[0]->shape[1], c->params, err);
    if (rc == 0)
        loss_from(c, c->in[0]->data);
    return rc;
}

int
CPU_FN(sce_loss)(struct gd_op_call *c, struct gd_err *err)
{
    const struct gd_tensor *x = c->in[0];
    int64_t n = x->shape[0], classes = x->shape[1];
    int64_t d = n * classes > 0 ? gd_tensor_numel(x) / (n * classes) : 0;
    int rc = check_targets(c->in[1], classes, c->params, err);
    if (rc != 0)
        return rc;
    real *lp = c->n_out > 1 ? c->out[1]->data : CPU_FN(mem_alloc)(gd_tensor_nbytes(x));
    if (lp == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory for the log-probabilities");
    const real *xv = x->data;
    for (int64_t b = 0; b < n; b++) {
        for (int64_t j = 0; j < d; j++) {
            const real *xp = xv + b * classes * d + j;
            real *lq = lp + b * classes * d + j;
            real m = -INFINITY;
            for (int64_t a = 0; a < classes; a++)
                if (xp[a * d] > m || isnan(xp[a * d]))
                    m = xp[a * d];
            real s = 0;
            for (int64_t a = 0; a < classes; a++)
                s += R(exp)(xp[a * d] - m);
            real log_s = R(log)(s);
            for (int64_t a = 0; a < classes; a++)
                lq[a * d] = (xp[a * d] - m) - log_s;
        }
    }
    loss_from(c, lp);
    if (c->n_out < 2)
        free(lp);
    return 0;
}
