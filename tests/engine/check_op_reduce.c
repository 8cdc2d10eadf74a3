/* check_op_reduce.c: Softmax, LogSoftmax, ReduceSum/Mean/Max, ArgMax (engine/cpu/op_reduce.c). */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "tolerance.h"

/* The row of element i along the op's axis: first element, length, stride. */
struct row {
    int64_t first, len, stride;
};

static struct row
row_of(const struct of_case *c, int64_t i)
{
    const struct gd_tensor *x = c->in[0];
    int64_t axis = of_attr_int(c, "axis", -1);
    if (axis < 0)
        axis += x->ndim;
    int64_t inner = 1;
    for (int d = (int)axis + 1; d < x->ndim; d++)
        inner *= x->shape[d];
    int64_t len = x->shape[axis];
    int64_t outer_i = i / (len * inner), inner_i = i % inner;
    struct row r = {outer_i * len * inner + inner_i, len, inner};
    return r;
}

/* Over the row of i: m the maximum, spread the range of its finite values, s = sum e^(x-m). */
static void
row_stats(const struct of_case *c, int64_t i, double *m, double *spread, double *s)
{
    struct row r = row_of(c, i);
    double lo = INFINITY, hi = -INFINITY;
    *m = -INFINITY;
    for (int64_t a = 0; a < r.len; a++) {
        double v = of_get(c->in[0], r.first + a * r.stride);
        *m = v > *m ? v : *m;
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    *spread = hi >= lo ? hi - lo : 0;
    *s = 0;
    for (int64_t a = 0; a < r.len; a++)
        *s += exp(of_get(c->in[0], r.first + a * r.stride) - *m);
}

/*
 * Softmax: d = x - m rounds (u |d|), which exp turns into u |d| relative; exp adds
 * 2 L(exp) u. So each term e_a carries (|d_a| + 2 L(exp)) u, and their sum s, of positive
 * terms, at most (D + 2 L(exp)) u (D the spread of the row, >= |d_a|) plus the summation's
 * gamma_{len-1}; the division adds u:
 *   |y' - y| <= y ((|d| + D + 4 L(exp) + 1) u + gamma_{len-1}(u)).
 * A -inf input gives exactly 0; results that underflow get 4 subnormal steps.
 */
static double
bound_softmax(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double u = tol_unit_roundoff(dtype), y = fabs(of_get(c->want[k], i));
    double x = of_get(c->in[0], i), floor = 4 * tol_denorm_min(dtype) + TOL_REF_REL * y;
    if (!isfinite(x))
        return floor;
    double m, spread, s;
    row_stats(c, i, &m, &spread, &s);
    struct row r = row_of(c, i);
    double rel = (fabs(x - m) + spread + 4 * tol_libm_ulps(TOL_EXP, dtype) + 1) * u +
                 tol_gamma(r.len - 1, u);
    return y * rel + floor;
}

/*
 * LogSoftmax: y = d - log(s). d rounds (u |d|); s carries (D + 2 L(exp)) u + gamma_{len-1}
 * relative, which log turns into that much absolute; log adds 2 L(log) u |log s|; the
 * subtraction u |y|:
 *   |y' - y| <= u |d| + (D + 2 L(exp)) u + gamma_{len-1}(u) + 2 L(log) u log(s) + u |y|.
 */
static double
bound_log_softmax(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double u = tol_unit_roundoff(dtype), y = fabs(of_get(c->want[k], i));
    double x = of_get(c->in[0], i), m, spread, s;
    row_stats(c, i, &m, &spread, &s);
    struct row r = row_of(c, i);
    return u * fabs(x - m) + (spread + 2 * tol_libm_ulps(TOL_EXP, dtype)) * u +
           tol_gamma(r.len - 1, u) + 2 * tol_libm_ulps(TOL_LOG, dtype) * u * fabs(log(s)) + u * y +
           TOL_REF_REL * y + 4 * tol_denorm_min(dtype);
}

/*
 * ReduceSum: n terms summed from +0: n - 1 inexact additions, gamma_{n-1}(u) sum|x|.
 * ReduceMean: the same sum then one division: gamma_n(u) sum|x| / n. (of_bound_sum with
 * -1 and 0 roundings beyond n; mag0.npy holds sum|x| and sum|x| / n.)
 */
static int sum_after = -1, mean_after = 0;

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}
#define AXES_CASES                                                                           \
    "rep", "axes_negative", "keepdims0", "all_axes", "all_axes_keepdims0", "axes_input",      \
        "axes_input_keepdims0", "noop", "long"

static const struct of_op red_ops[] = {
    {"Softmax", CASES("rep", "axis0", "axis_middle", "axis_negative", "large", "neg_inf",
                      "length_one", "wide"), bound_softmax, NULL},
    {"LogSoftmax", CASES("rep", "axis0", "axis_middle", "axis_negative", "large", "neg_inf",
                         "length_one", "wide"), bound_log_softmax, NULL},
    {"ReduceSum", CASES(AXES_CASES), of_bound_sum, &sum_after},
    {"ReduceMean", CASES(AXES_CASES), of_bound_sum, &mean_after},
    {"ReduceMax", CASES(AXES_CASES, "nan"), NULL, NULL},
    {"ArgMax", CASES("rep", "axis_last_keepdims0", "axis_middle", "ties_first", "ties_last",
                     "nan", "nan_last"), NULL, NULL},
};
/* clang-format on */

int
main(void)
{
    return of_main("op_reduce", red_ops, (int)(sizeof red_ops / sizeof red_ops[0]));
}
