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

/*
 * Sum folds its n inputs left to right: n - 1 additions, gamma_{n-1}(u) sum|x|; Mean then
 * divides once: gamma_n(u) sum|x| / n (of_bound_sum with -1 and 0 roundings beyond n, the
 * number of inputs; mag0.npy holds sum|x| and sum|x| / n).
 */
static int sum_after = -1, mean_after = 0;

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}
#define INT_ARITH "uint8", "int32", "int64"
#define INT_ALL "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"
#define INT_CMP "int32", "uint64", "int8"

/* Max and Min select (NaN propagating, numpy's maximum/minimum: a tie gives the second
 * operand, which decides the sign of a zero); comparisons give bool: bitwise. Integer data
 * (the int* and uint* cases) is exact everywhere: the bound does not apply to it. Mod with
 * fmod=1 is C's fmod, exact. */
static const struct of_op elt_ops[] = {
    {"Add", CASES("rep", "scalar", "row", "column", "rank_extend", "both", "left_small",
                  "weight", "edge", INT_ARITH), bound_rounded, NULL},
    {"Sub", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge", INT_ARITH),
     bound_rounded, NULL},
    {"Mul", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge", INT_ARITH),
     bound_rounded, NULL},
    {"Div", CASES("rep", "scalar", "row", "column", "rank_extend", "weight", "edge", INT_ARITH,
                  "int32_edge"), bound_rounded, NULL},
    {"Pow", CASES("rep", "int_exponent", "square", "row", "column", "edge"), bound_pow, NULL},
    {"Max", CASES("rep", "one_input", "three", "nan", "weight", INT_ALL, "int32_three"), NULL,
     NULL},
    {"Min", CASES("rep", "one_input", "three", "nan", "weight", INT_ALL, "int32_three"), NULL,
     NULL},
    {"PRelu", CASES("rep", "scalar", "full", "edge"), bound_rounded, NULL},
    {"Greater", CASES("rep", "scalar", "edge", INT_CMP), NULL, NULL},
    {"Less", CASES("rep", "scalar", "edge", INT_CMP), NULL, NULL},
    {"Equal", CASES("rep", "scalar", "edge", INT_CMP, "bool"), NULL, NULL},
    {"GreaterOrEqual", CASES("rep", "scalar", "edge", INT_CMP), NULL, NULL},
    {"LessOrEqual", CASES("rep", "scalar", "edge", INT_CMP), NULL, NULL},
    {"Sum", CASES("rep", "one_input", "two", "broadcast", "many", "edge"), of_bound_sum,
     &sum_after},
    {"Mean", CASES("rep", "one_input", "two", "broadcast", "many", "edge"), of_bound_sum,
     &mean_after},
    {"Mod", CASES("rep", "edge", "broadcast_float", INT_ALL, "int8_fmod", "int16_fmod",
                  "int32_fmod", "int64_fmod", "uint8_fmod", "uint16_fmod", "uint32_fmod",
                  "uint64_fmod", "mixed_sign", "broadcast"), NULL, NULL},
};
/* clang-format on */

int
main(void)
{
    return of_main("op_eltwise", elt_ops, (int)(sizeof elt_ops / sizeof elt_ops[0]));
}
