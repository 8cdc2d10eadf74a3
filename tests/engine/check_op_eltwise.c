/* check_op_eltwise.c: binary and variadic pointwise ops (engine/cpu/op_eltwise.c). */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "tolerance.h"

/*
 * Add, Sub, Mul, Div and PRelu (slope * x) are one IEEE operation on exact inputs, correctly
 * rounded: half an ulp of the exact result, plus 2^-53 |y*| for the reference and half a
 * subnormal step for results in the subnormal range.
 */
static double
bound_rounded(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double w = of_get(c->want[k], i);
    return 0.5 * tol_ulp(w, dtype) + TOL_REF_REL * fabs(w) + tol_denorm_min(dtype);
}

/* Pow: one libm call, glibc's L(pow) ulps of the result. */
static double
bound_pow(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double w = of_get(c->want[k], i);
    return tol_libm_ulps(TOL_POW, dtype) * tol_ulp(w, dtype) + TOL_REF_REL * fabs(w) +
           4 * tol_denorm_min(dtype);
}

struct elt_op {
    const char *op;
    const char *const *cases;
    of_bound_fn bound; /* NULL: bitwise equal to numpy's float32 (bool) result */
};

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* Max and Min select (NaN propagating, numpy's maximum/minimum: a tie gives the second
 * operand, which decides the sign of a zero); comparisons give bool: bitwise. */
static const struct elt_op elt_ops[] = {
    {"Add", CASES("rep", "scalar", "row", "column", "rank_extend", "both", "left_small",
                  "weight", "edge"), bound_rounded},
    {"Sub", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded},
    {"Mul", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded},
    {"Div", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded},
    {"Pow", CASES("rep", "int_exponent", "square", "row", "column", "edge"), bound_pow},
    {"Max", CASES("rep", "one_input", "three", "nan", "weight"), NULL},
    {"Min", CASES("rep", "one_input", "three", "nan", "weight"), NULL},
    {"PRelu", CASES("rep", "scalar", "full", "edge"), bound_rounded},
    {"Greater", CASES("rep", "scalar", "edge"), NULL},
    {"Less", CASES("rep", "scalar", "edge"), NULL},
    {"Equal", CASES("rep", "scalar", "edge"), NULL},
};
/* clang-format on */

#define N_OPS ((int)(sizeof elt_ops / sizeof elt_ops[0]))

static struct {
    int op, k;
} flat[256];
static int n_flat;

START_TEST(test_eltwise)
{
    const struct elt_op *e = &elt_ops[flat[_i].op];
    of_check_case(e->op, e->cases[flat[_i].k], e->bound, NULL);
}
END_TEST

START_TEST(test_listing)
{
    for (int i = 0; i < N_OPS; i++)
        of_check_listing(elt_ops[i].op, elt_ops[i].cases);
}
END_TEST

int
main(void)
{
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; elt_ops[i].cases[k] != NULL; k++)
            flat[n_flat].op = i, flat[n_flat++].k = k;
    Suite *s = suite_create("op_eltwise");
    TCase *tc = tcase_create("eltwise");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_eltwise, 0, n_flat);
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
