/*
 * op_reduce.c: reductions on the CPU.
 *
 * ReduceSum/Mean/Max visit the reduced elements of each output in row-major order of the
 * reduced axes and accumulate sequentially; Mean divides the sum once. Softmax along an
 * axis: m = max, s = sum of exp(x - m) in axis order, y = exp(x - m) / s; LogSoftmax
 * y = (x - m) - log(s). ArgMax returns the first index of the maximum (the last with
 * select_last_index), and a NaN counts as the maximum, as in numpy.
 */
#include <string.h>

#include "cpu.h"

/* Splits a shape around one axis: outer x len x inner. */
static void
split_axis(const struct gd_tensor *t, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < axis)
            *outer *= t->shape[i];
        else if (i > axis)
            *inner *= t->shape[i];
    }
    *len = t->shape[axis];
}

static int
softmax_common(struct gd_op_call *c, int log_form)
{
    int64_t outer, len, inner;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    const real *x = c->in[0]->data;
    real *y = c->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const real *xp = x + o * len * inner + i;
            real *yp = y + o * len * inner + i;
            real m = -INFINITY;
            for (int64_t a = 0; a < len; a++)
                if (xp[a * inner] > m || isnan(xp[a * inner]))
                    m = xp[a * inner];
            real s = 0;
            for (int64_t a = 0; a < len; a++)
                s += R(exp)(xp[a * inner] - m);
            for (int64_t a = 0; a < len; a++) {
                real d = xp[a * inner] - m;
                yp[a * inner] = log_form ? d - R(log)(s) : R(exp)(d) / s;
            }
        }
    }
    return 0;
}

int
CPU_FN(softmax)(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_common(c, 0);
}

int
CPU_FN(log_softmax)(struct gd_op_call *c, struct gd_err *err)
{
    return softmax_common(c, 1);
}

enum red { RED_SUM, RED_MEAN, RED_MAX };

static int
reduce_axes(struct gd_op_call *c, enum red kind)
{
    const struct gd_tensor *xt = c->in[0];
    const struct gd_params *p = c->params;
    const real *x = xt->data;
    real *y = c->out[0]->data;
    if (p->n_axes == 0) { /* noop_with_empty_axes */
        memcpy(y, x, gd_tensor_nbytes(xt));
        return 0;
    }
    int nd = xt->ndim;
    int64_t stride[GD_MAX_DIMS], s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        stride[i] = s;
        s *= xt->shape[i];
    }
    int is_red[GD_MAX_DIMS] = {0};
    for (int i = 0; i < p->n_axes; i++)
        is_red[p->axes[i]] = 1;
    int kept[GD_MAX_DIMS], red[GD_MAX_DIMS], nk = 0, nr = 0;
    int64_t count = 1;
    for (int i = 0; i < nd; i++) {
        if (is_red[i]) {
            red[nr++] = i;
            count *= xt->shape[i];
        } else {
            kept[nk++] = i;
        }
    }
    int64_t n_out = gd_tensor_numel(c->out[0]);
    int64_t ko[GD_MAX_DIMS] = {0};
    for (int64_t o = 0; o < n_out; o++) {
        int64_t base = 0;
        for (int i = 0; i < nk; i++)
            base += ko[i] * stride[kept[i]];
        real acc = kind == RED_MAX ? -INFINITY : 0;
        int64_t ri[GD_MAX_DIMS] = {0}, off = 0;
        for (int64_t t = 0; t < count; t++) {
            real v = x[base + off];
            if (kind != RED_MAX)
                acc += v;
            else if (!isnan(acc) && (v > acc || isnan(v)))
                acc = v;
            for (int i = nr - 1; i >= 0; i--) {
                off += stride[red[i]];
                if (++ri[i] < xt->shape[red[i]])
                    break;
                off -= stride[red[i]] * xt->shape[red[i]];
                ri[i] = 0;
            }
        }
        y[o] = kind == RED_MEAN ? acc / (real)count : acc;
        for (int i = nk - 1; i >= 0; i--) {
            if (++ko[i] < xt->shape[kept[i]])
                break;
            ko[i] = 0;
        }
    }
    return 0;
}

int
CPU_FN(reduce_sum)(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes(c, RED_SUM);
}

int
CPU_FN(reduce_mean)(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes(c, RED_MEAN);
}

int
CPU_FN(reduce_max)(struct gd_op_call *c, struct gd_err *err)
{
    return reduce_axes(c, RED_MAX);
}

int
CPU_FN(argmax)(struct gd_op_call *c, struct gd_err *err)
{
    int64_t outer, len, inner;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    const real *x = c->in[0]->data;
    int64_t *y = c->out[0]->data;
    int last = c->params->select_last_index;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const real *xp = x + o * len * inner + i;
            int64_t best = 0;
            real bv = xp[0];
            for (int64_t a = 1; a < len; a++) {
                real v = xp[a * inner];
                /* once a NaN is the maximum, only a later NaN can replace it (the last one
                 * with select_last_index, as ONNX's reference finds it on the flipped axis) */
                int take = isnan(bv) ? last && isnan(v) : isnan(v) || v > bv || (last && v == bv);
                if (take) {
                    bv = v;
                    best = a;
                }
                if (isnan(bv) && !last)
                    break;
            }
            y[o * inner + i] = best;
        }
    }
    return 0;
}
