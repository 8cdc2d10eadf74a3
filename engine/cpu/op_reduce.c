/*
 * op_reduce.c: reductions on the CPU.
 *
 * The Reduce* ops visit the reduced elements of each output in row-major order of the
 * reduced axes and accumulate sequentially from +0 (ReduceProd from 1); Mean divides the sum
 * once, L2 takes one square root of the sum of squares, LogSum one log of the sum, LogSumExp
 * is m + log(sum exp(x - m)) with m the maximum. Softmax along an axis: m = max, s = sum of
 * exp(x - m) in axis order, y = exp(x - m) / s; LogSoftmax y = (x - m) - log(s). ArgMax and
 * ArgMin return the first index of the extremum (the last with select_last_index), a NaN
 * counting as the extremum, as in numpy; Hardmax puts its 1 at ArgMax's index. CumSum adds
 * along the axis in order. Integer data follows engine/core/elt_rules.h.
 */
#include <string.h>

#include "../core/elt_rules.h"
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

enum red {
    RED_SUM,
    RED_MEAN,
    RED_MAX,
    RED_MIN,
    RED_PROD,
    RED_L1,
    RED_L2,
    RED_SUM_SQUARE,
    RED_LOG_SUM,
    RED_LOG_SUM_EXP
};

/*
 * The reduced elements of one output: the kept axes number the outputs (C order), the
 * reduced axes number an output's terms (C order); strides are the input's.
 */
struct red_walk {
    int nk, nr;
    int kept[GD_MAX_DIMS], red[GD_MAX_DIMS];
    int64_t stride[GD_MAX_DIMS];
    const int64_t *shape;
    int64_t count;
};

static void
red_walk_init(struct red_walk *w, const struct gd_tensor *x, const struct gd_params *p)
{
    int is_red[GD_MAX_DIMS] = {0};
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        w->stride[i] = s;
        s *= x->shape[i];
    }
    for (int i = 0; i < p->n_axes; i++)
        is_red[p->axes[i]] = 1;
    w->nk = w->nr = 0;
    w->count = 1;
    w->shape = x->shape;
    for (int i = 0; i < x->ndim; i++) {
        if (is_red[i]) {
            w->red[w->nr++] = i;
            w->count *= x->shape[i];
        } else {
            w->kept[w->nk++] = i;
        }
    }
}

/* Offset of the first term of the output whose kept-axis counters are ko. */
static int64_t
red_base(const struct red_walk *w, const int64_t *ko)
{
    int64_t base = 0;
    for (int i = 0; i < w->nk; i++)
        base += ko[i] * w->stride[w->kept[i]];
    return base;
}

/* Steps the term counters ri and their offset off to the next term. */
static inline void
red_next_term(const struct red_walk *w, int64_t *ri, int64_t *off)
{
    for (int i = w->nr - 1; i >= 0; i--) {
        *off += w->stride[w->red[i]];
        if (++ri[i] < w->shape[w->red[i]])
            return;
        *off -= w->stride[w->red[i]] * w->shape[w->red[i]];
        ri[i] = 0;
    }
}

static void
red_next_output(const struct red_walk *w, int64_t *ko)
{
    for (int i = w->nk - 1; i >= 0; i--) {
        if (++ko[i] < w->shape[w->kept[i]])
            return;
        ko[i] = 0;
    }
}

/*
 * One float output: its terms in C order of the reduced axes, one sequential accumulation.
 * Max and Min propagate NaN (the first NaN stays); LogSumExp takes the maximum m first and
 * sums exp(x - m), y = m + log(sum), so nothing overflows (a non-finite m is the result).
 */
static real
red_float(const struct red_walk *w, const real *x, enum red kind)
{
    int64_t ri[GD_MAX_DIMS] = {0}, off = 0;
    real acc =
        kind == RED_MAX || kind == RED_LOG_SUM_EXP ? -INFINITY : (kind == RED_MIN ? INFINITY : 0);
    if (kind == RED_PROD)
        acc = 1;
    for (int64_t t = 0; t < w->count; t++) {
        real v = x[off];
        switch (kind) {
        case RED_MAX:
        case RED_LOG_SUM_EXP:
            if (!isnan(acc) && (v > acc || isnan(v)))
                acc = v;
            break;
        case RED_MIN:
            if (!isnan(acc) && (v < acc || isnan(v)))
                acc = v;
            break;
        case RED_PROD:
            acc *= v;
            break;
        case RED_L1:
            acc += R(fabs)(v);
            break;
        case RED_L2:
        case RED_SUM_SQUARE:
            acc += v * v;
            break;
        default: /* SUM, MEAN, LOG_SUM */
            acc += v;
            break;
        }
        red_next_term(w, ri, &off);
    }
    switch (kind) {
    case RED_MEAN:
        return acc / (real)w->count;
    case RED_L2:
        return R(sqrt)(acc);
    case RED_LOG_SUM:
        return R(log)(acc);
    case RED_LOG_SUM_EXP: {
        real m = acc, s = 0;
        if (!isfinite(m))
            return m;
        for (int64_t t = 0; t < w->count; t++) {
            s += R(exp)(x[off] - m);
            red_next_term(w, ri, &off);
        }
        return m + R(log)(s);
    }
    default:
        return acc;
    }
}

/* One integer output (elt_rules.h: wrapping arithmetic); an empty reduction gives the
 * identity of the op (0, 1, the type's smallest value for Max, its largest for Min). */
static int64_t
red_int(const struct red_walk *w, enum gd_dtype dt, const void *x, int64_t base, enum red kind)
{
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    int64_t ri[GD_MAX_DIMS] = {0}, off = base;
    int64_t acc = kind == RED_PROD ? 1 : 0;
    if (w->count == 0 && (kind == RED_MAX || kind == RED_MIN)) {
        int64_t top =
            bits == 64 ? (uns ? -1 : INT64_MAX) : (int64_t)(((uint64_t)1 << (bits - !uns)) - 1);
        int64_t bottom = uns ? 0 : (bits == 64 ? INT64_MIN : -top - 1);
        return kind == RED_MAX ? bottom : top;
    }
    for (int64_t t = 0; t < w->count; t++) {
        int64_t v = gd__int_load(dt, x, off);
        switch (kind) {
        case RED_MAX:
            acc = t == 0 ? v : gd__int_binary(GD_IOP_MAX, acc, v, uns, bits);
            break;
        case RED_MIN:
            acc = t == 0 ? v : gd__int_binary(GD_IOP_MIN, acc, v, uns, bits);
            break;
        case RED_PROD:
            acc = gd__int_binary(GD_IOP_MUL, acc, v, uns, bits);
            break;
        case RED_L1:
            acc = gd__int_binary(GD_IOP_ADD, acc, gd__int_abs(v, uns), uns, bits);
            break;
        case RED_SUM_SQUARE:
            acc = gd__int_binary(GD_IOP_ADD, acc, gd__int_binary(GD_IOP_MUL, v, v, uns, bits), uns,
                                 bits);
            break;
        default: /* SUM */
            acc = gd__int_binary(GD_IOP_ADD, acc, v, uns, bits);
            break;
        }
        red_next_term(w, ri, &off);
    }
    return acc;
}

static int
reduce_axes(struct gd_op_call *c, enum red kind)
{
    const struct gd_tensor *xt = c->in[0];
    const struct gd_params *p = c->params;
    struct gd_tensor *yt = c->out[0];
    if (p->n_axes == 0) { /* noop_with_empty_axes: the input itself (ONNX's definition) */
        memcpy(yt->data, xt->data, gd_tensor_nbytes(xt));
        return 0;
    }
    struct red_walk w;
    red_walk_init(&w, xt, p);
    int is_float = gd_dtype_is_float(xt->dtype);
    int64_t n_out = gd_tensor_numel(yt), ko[GD_MAX_DIMS] = {0};
    for (int64_t o = 0; o < n_out; o++) {
        int64_t base = red_base(&w, ko);
        if (is_float)
            ((real *)yt->data)[o] = red_float(&w, (const real *)xt->data + base, kind);
        else
            gd__int_store(yt->dtype, yt->data, o, red_int(&w, xt->dtype, xt->data, base, kind));
        red_next_output(&w, ko);
    }
    return 0;
}

#define REDUCE_ENTRY(fn, kind)                                                                     \
    int CPU_FN(fn)(struct gd_op_call * c, struct gd_err * err)                                     \
    {                                                                                              \
        (void)err;                                                                                 \
        return reduce_axes(c, kind);                                                               \
    }

REDUCE_ENTRY(reduce_sum, RED_SUM)
REDUCE_ENTRY(reduce_mean, RED_MEAN)
REDUCE_ENTRY(reduce_max, RED_MAX)
REDUCE_ENTRY(reduce_min, RED_MIN)
REDUCE_ENTRY(reduce_prod, RED_PROD)
REDUCE_ENTRY(reduce_l1, RED_L1)
REDUCE_ENTRY(reduce_l2, RED_L2)
REDUCE_ENTRY(reduce_sum_square, RED_SUM_SQUARE)
REDUCE_ENTRY(reduce_log_sum, RED_LOG_SUM)
REDUCE_ENTRY(reduce_log_sum_exp, RED_LOG_SUM_EXP)

/*
 * The index along the axis that ArgMax (want_max) or ArgMin picks in the row at xp with
 * the given stride: the first extremum (the last with select_last_index); a NaN counts as
 * the extremum, as numpy's argmax and argmin have it.
 */
static int64_t
arg_float(const real *xp, int64_t len, int64_t stride, int want_max, int last)
{
    int64_t best = 0;
    real bv = xp[0];
    for (int64_t a = 1; a < len; a++) {
        real v = xp[a * stride];
        /* once a NaN is the extremum, only a later NaN can replace it (the last one with
         * select_last_index, as ONNX's reference finds it on the flipped axis) */
        int better = want_max ? v > bv : v < bv;
        int take = isnan(bv) ? last && isnan(v) : isnan(v) || better || (last && v == bv);
        if (take) {
            bv = v;
            best = a;
        }
        if (isnan(bv) && !last)
            break;
    }
    return best;
}

static int64_t
arg_int(enum gd_dtype dt, const void *x, int64_t first, int64_t len, int64_t stride, int want_max,
        int last)
{
    int uns = gd__dtype_unsigned(dt);
    int64_t best = 0, bv = gd__int_load(dt, x, first);
    for (int64_t a = 1; a < len; a++) {
        int64_t v = gd__int_load(dt, x, first + a * stride);
        int better = gd__int_compare(want_max ? GD_CMP_GREATER : GD_CMP_LESS, v, bv, uns);
        if (better || (last && v == bv)) {
            bv = v;
            best = a;
        }
    }
    return best;
}

static int
arg_extremum(struct gd_op_call *c, int want_max)
{
    int64_t outer, len, inner;
    const struct gd_tensor *x = c->in[0];
    split_axis(x, c->params->axis, &outer, &len, &inner);
    int64_t *y = c->out[0]->data;
    int last = c->params->select_last_index;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t first = o * len * inner + i;
            y[o * inner + i] =
                gd_dtype_is_float(x->dtype)
                    ? arg_float((const real *)x->data + first, len, inner, want_max, last)
                    : arg_int(x->dtype, x->data, first, len, inner, want_max, last);
        }
    }
    return 0;
}

int
CPU_FN(argmax)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return arg_extremum(c, 1);
}

int
CPU_FN(argmin)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    return arg_extremum(c, 0);
}

/* Hardmax: 1 at ArgMax's index along the axis (the first maximum, or the first NaN), 0 at
 * every other element of the row. */
int
CPU_FN(hardmax)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    int64_t outer, len, inner;
    split_axis(c->in[0], c->params->axis, &outer, &len, &inner);
    const real *x = c->in[0]->data;
    real *y = c->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t first = o * len * inner + i;
            int64_t best = len > 0 ? arg_float(x + first, len, inner, 1, 0) : 0;
            for (int64_t a = 0; a < len; a++)
                y[first + a * inner] = a == best ? 1 : 0;
        }
    }
    return 0;
}

/*
 * CumSum along the axis: each row summed in order (from its end with reverse), from +0,
 * y[k] = x[0] + ... + x[k] (x[k] left out with exclusive), one rounding per addition.
 * Integers wrap (elt_rules.h).
 */
int
CPU_FN(cumsum)(struct gd_op_call *c, struct gd_err *err)
{
    (void)err;
    int64_t outer, len, inner;
    const struct gd_tensor *x = c->in[0];
    struct gd_tensor *y = c->out[0];
    split_axis(x, c->params->axis, &outer, &len, &inner);
    int excl = c->params->exclusive, rev = c->params->reverse;
    int is_float = gd_dtype_is_float(x->dtype);
    enum gd_dtype dt = x->dtype;
    int uns = gd__dtype_unsigned(dt), bits = gd__dtype_bits(dt);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            real acc = 0;
            int64_t iacc = 0;
            for (int64_t k = 0; k < len; k++) {
                int64_t a = rev ? len - 1 - k : k;
                int64_t at = o * len * inner + a * inner + i;
                if (is_float) {
                    real v = ((const real *)x->data)[at];
                    if (!excl)
                        acc += v;
                    ((real *)y->data)[at] = acc;
                    if (excl)
                        acc += v;
                } else {
                    int64_t v = gd__int_load(dt, x->data, at);
                    if (!excl)
                        iacc = gd__int_binary(GD_IOP_ADD, iacc, v, uns, bits);
                    gd__int_store(dt, y->data, at, iacc);
                    if (excl)
                        iacc = gd__int_binary(GD_IOP_ADD, iacc, v, uns, bits);
                }
            }
        }
    }
    return 0;
}
