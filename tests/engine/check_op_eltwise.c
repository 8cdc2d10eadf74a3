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

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* Max and Min select (NaN propagating, numpy's maximum/minimum: a tie gives the second
 * operand, which decides the sign of a zero); comparisons give bool: bitwise. */
static const struct of_op elt_ops[] = {
    {"Add", CASES("rep", "scalar", "row", "column", "rank_extend", "both", "left_small",
                  "weight", "edge"), bound_rounded, NULL},
    {"Sub", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded, NULL},
    {"Mul", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded, NULL},
    {"Div", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge"),
     bound_rounded, NULL},
    {"Pow", CASES("rep", "int_exponent", "square", "row", "column", "edge"), bound_pow, NULL},
    {"Max", CASES("rep", "one_input", "three", "nan", "weight"), NULL, NULL},
    {"Min", CASES("rep", "one_input", "three", "nan", "weight"), NULL, NULL},
    {"PRelu", CASES("rep", "scalar", "full", "edge"), bound_rounded, NULL},
    {"Greater", CASES("rep", "scalar", "edge"), NULL, NULL},
    {"Less", CASES("rep", "scalar", "edge"), NULL, NULL},
    {"Equal", CASES("rep", "scalar", "edge"), NULL, NULL},
};
/* clang-format on */

int
main(void)
{
    return of_main("op_eltwise", elt_ops, (int)(sizeof elt_ops / sizeof elt_ops[0]));
}
