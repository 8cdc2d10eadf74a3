/* check_op_reduce.c: Softmax, LogSoftmax, ReduceSum/Mean/Max, ArgMax (engine/cpu/op_reduce.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/graph.h"
#include "gpudiff/model.h"
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
 * ReduceL1: n - 1 additions of |x| (exact): gamma_{n-1}(u) sum|x|.
 * ReduceProd: from 1, n - 1 inexact products: gamma_{n-1}(u) |y| (mag0 = |y|), as long as no
 * partial product underflows (the fixtures keep the factors near 1).
 * ReduceSumSquare: each term passes through at most n roundings (its square, n - 1
 * additions) and all are positive: gamma_n(u) y.
 * ReduceL2 = sqrt(S'), S' = S (1 + e), |e| <= gamma_n; |sqrt(1 + e) - 1| <= |e| and the root
 * rounds once: (1 + gamma_n)(1 + u) - 1 <= gamma_{n+1}(u) |y| (Higham lemma 3.3).
 * CumSum: each output is a running sum of at most n = the axis length terms: gamma_{n-1}(u)
 * times the running sum of |x| (mag0).
 */
static int sum_after = -1, mean_after = 0, square_after = 0, l2_after = 1;

/*
 * ReduceLogSum: y = log(S'), S' = S + d, |d| <= gamma_{n-1}(u) sum|x| = gamma k |S| with
 * k = sum|x| / |S| (the fixture's mag0 holds k + |y|): |log S' - log S| <= -log(1 - gamma k)
 * while gamma k < 1; log adds L(log) ulps of log S', 2 L(log) u (|y| + that).
 */
static double
bound_log_sum(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double u = tol_unit_roundoff(dtype), y = fabs(of_get(c->want[k], i));
    double kappa = of_get(c->mag[k], i) - y;
    double r = tol_gamma(c->reduction_len - 1, u) * kappa;
    if (r >= 1)
        return INFINITY;
    double sum_err = -log1p(-r);
    return sum_err + 2 * tol_libm_ulps(TOL_LOG, dtype) * u * (y + sum_err) + TOL_REF_REL * y +
           4 * tol_denorm_min(dtype);
}

/*
 * ReduceLogSumExp = m + log(s), s = sum exp(x - m), m the maximum, as LogSoftmax's sum: each
 * x - m rounds (u |x - m| <= u D, D the spread of the row), exp turns that into relative error
 * and adds 2 L(exp) u; the sum of positive terms gamma_{n-1}; log turns s's relative error
 * into absolute and adds 2 L(log) u log s; m + log s rounds, u |y|:
 *   u D + 2 L(exp) u + gamma_{n-1}(u) + 2 L(log) u log s + u |y|.
 * mag0 holds 1 + D + log s + |y|; as 2 L(log) >= 1, u D + 2 L(log) u log s is at most
 * 2 L(log) u (mag0 - 1 - |y|). A row with a non-finite maximum gives it exactly.
 */
static double
bound_log_sum_exp(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double u = tol_unit_roundoff(dtype), y = fabs(of_get(c->want[k], i));
    double rest = of_get(c->mag[k], i) - 1 - y;
    if (of_get(c->mag[k], i) == 0)
        return 4 * tol_denorm_min(dtype);
    return 2 * tol_libm_ulps(TOL_EXP, dtype) * u + tol_gamma(c->reduction_len - 1, u) +
           2 * tol_libm_ulps(TOL_LOG, dtype) * u * (rest > 0 ? rest : 0) + u * y + TOL_REF_REL * y +
           4 * tol_denorm_min(dtype);
}

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}
#define AXES_CASES                                                                           \
    "rep", "axes_negative", "keepdims0", "all_axes", "all_axes_keepdims0", "axes_input",      \
        "axes_input_keepdims0", "noop", "long", "axes_empty_input", "axes_empty_input_noop"
#define NEW_AXES_CASES AXES_CASES, "wide"
#define INT_CASES "int32", "int64", "uint8", "int32_all_axes"
#define ARG_CASES                                                                            \
    "rep", "axis_last_keepdims0", "axis_middle", "ties_first", "ties_last", "nan", "nan_last", \
        "int32", "int32_last", "int64_axis0", "uint8"

/* ReduceMax, ReduceMin, ArgMax, ArgMin and Hardmax select: bitwise; the integer cases of
 * every reduction are exact (the bound does not apply to them). */
static const struct of_op red_ops[] = {
    {"Softmax", CASES("rep", "axis0", "axis_middle", "axis_negative", "large", "neg_inf",
                      "length_one", "wide"), bound_softmax, NULL},
    {"LogSoftmax", CASES("rep", "axis0", "axis_middle", "axis_negative", "large", "neg_inf",
                         "length_one", "wide"), bound_log_softmax, NULL},
    {"ReduceSum", CASES(AXES_CASES, INT_CASES), of_bound_sum, &sum_after},
    {"ReduceMean", CASES(AXES_CASES), of_bound_sum, &mean_after},
    {"ReduceMax", CASES(AXES_CASES, "nan", INT_CASES), NULL, NULL},
    {"ArgMax", CASES(ARG_CASES), NULL, NULL},
    {"ReduceMin", CASES(NEW_AXES_CASES, "nan", INT_CASES), NULL, NULL},
    {"ReduceProd", CASES(NEW_AXES_CASES, INT_CASES), of_bound_sum, &sum_after},
    {"ReduceL1", CASES(NEW_AXES_CASES, INT_CASES), of_bound_sum, &sum_after},
    {"ReduceL2", CASES(NEW_AXES_CASES), of_bound_sum, &l2_after},
    {"ReduceSumSquare", CASES(NEW_AXES_CASES, INT_CASES), of_bound_sum, &square_after},
    {"ReduceLogSum", CASES(NEW_AXES_CASES), bound_log_sum, NULL},
    {"ReduceLogSumExp", CASES(NEW_AXES_CASES, "large", "inf"), bound_log_sum_exp, NULL},
    {"ArgMin", CASES(ARG_CASES, "wide", "wide_last"), NULL, NULL},
    {"Hardmax", CASES("rep", "axis0", "axis_middle", "axis_negative", "ties", "nan"), NULL,
     NULL},
    {"CumSum", CASES("rep", "axis0", "negative_axis", "1d", "exclusive", "reverse",
                     "reverse_exclusive", "long", "int32", "int64_reverse"), of_bound_sum,
     &sum_after},
};
/* clang-format on */

/*
 * mixes_batch (gpudiff/ops.h): set by shape inference for the nodes whose reduced axes
 * include axis 0, so that `--batch` can refuse them; never for the others.
 */
struct mix_case {
    const char *op;
    const char *attrs;  /* JSON object */
    const char *second; /* JSON of a second input (a weight: the axes or CumSum's axis), or NULL */
    int mixes;
};

static const struct mix_case mix_cases[] = {
    {"ReduceSum", "{\"axes\": [0]}", NULL, 1},
    {"ReduceSum", "{\"axes\": [1, 2]}", NULL, 0},
    {"ReduceSum", "{}", NULL, 1}, /* every axis */
    {"ReduceSum", "{\"noop_with_empty_axes\": 1}", NULL, 0},
    {"ReduceMean", "{\"axes\": [-3]}", NULL, 1},
    {"ReduceMax", "{\"axes\": [-1]}", NULL, 0},
    {"ReduceMin", "{\"axes\": [0, 2]}", NULL, 1},
    {"ReduceProd", "{\"axes\": [2]}", NULL, 0},
    {"ReduceL2", "{}", NULL, 1},
    {"ReduceLogSumExp", "{}",
     "{\"name\": \"w\", \"dtype\": \"int64\", \"shape\": [1], "
     "\"values\": [0]}",
     1},
    {"ReduceL1", "{}",
     "{\"name\": \"w\", \"dtype\": \"int64\", \"shape\": [1], "
     "\"values\": [1]}",
     0},
    {"Softmax", "{\"axis\": 0}", NULL, 1},
    {"Softmax", "{}", NULL, 0},
    {"LogSoftmax", "{\"axis\": -3}", NULL, 1},
    {"ArgMax", "{}", NULL, 1}, /* ArgMax's axis defaults to 0 */
    {"ArgMin", "{\"axis\": 1}", NULL, 0},
    {"Hardmax", "{\"axis\": 0}", NULL, 1},
    {"Hardmax", "{}", NULL, 0},
    {"CumSum", "{}",
     "{\"name\": \"w\", \"dtype\": \"int64\", \"shape\": [], "
     "\"values\": [0]}",
     1},
    {"CumSum", "{}",
     "{\"name\": \"w\", \"dtype\": \"int32\", \"shape\": [], "
     "\"values\": [-1]}",
     0},
    {"Sum", "{}", NULL, 0},
    {"Add", "{}", NULL, 0},
    {"Cast", "{\"to\": 10}", NULL, 0},
};

START_TEST(mixes_batch_flag)
{
    const struct mix_case *m = &mix_cases[_i];
    char text[1024];
    int second_is_x = m->second == NULL && (strcmp(m->op, "Sum") == 0 || strcmp(m->op, "Add") == 0);
    snprintf(text, sizeof text,
             "{\"format\": \"gpudiff-model\", \"version\": 1, \"name\": \"m\", "
             "\"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 3, 2]}], "
             "\"weights\": [%s], \"nodes\": [{\"name\": \"n\", \"op\": \"%s\", "
             "\"inputs\": [\"x\"%s], \"outputs\": [\"y\"], \"attrs\": %s}], "
             "\"outputs\": [\"y\"]}",
             m->second ? m->second : "", m->op,
             m->second ? ", \"w\"" : (second_is_x ? ", \"x\"" : ""), m->attrs);
    struct gd_graph *g = NULL;
    struct gd_err err = {0};
    int rc = gd_model_parse(text, strlen(text), "mix model", ".", NULL, &g, &err);
    ck_assert_msg(rc == 0, "%s %s: %s", m->op, m->attrs, err.msg);
    ck_assert_msg(g->nodes[0].params.mixes_batch == m->mixes, "%s %s: mixes_batch %d, want %d",
                  m->op, m->attrs, g->nodes[0].params.mixes_batch, m->mixes);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    int rc = of_main("op_reduce", red_ops, (int)(sizeof red_ops / sizeof red_ops[0]));
    Suite *s = suite_create("mixes_batch");
    TCase *tc = tcase_create("mixes_batch");
    tcase_add_loop_test(tc, mixes_batch_flag, 0, (int)(sizeof mix_cases / sizeof mix_cases[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return rc == EXIT_SUCCESS && failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
