/*
 * tolerance.h: the error bounds the op tests check against, derived in docs/NUMERICS.md
 * ("Unit-test tolerances"): unit roundoff, ulps, gamma_n, glibc's documented libm errors,
 * and the one trait formula the cross-backend test applies to every op.
 */
#ifndef GPUDIFF_TESTS_TOLERANCE_H
#define GPUDIFF_TESTS_TOLERANCE_H

#include <stdint.h>

#include "gpudiff/ops.h"
#include "gpudiff/tensor.h"

/* The relative error of the fixtures' expected values: the float64 nearest the exact one. */
#define TOL_REF_REL 0x1p-53

/* Unit roundoff u of a compute dtype: 2^-24 float32, 2^-53 float64, 2^-11 float16,
 * 2^-8 bfloat16; 0 for a dtype that is not floating point. */
double tol_unit_roundoff(enum gd_dtype dtype);

/* The smallest positive subnormal of dtype: the absolute error floor near underflow. */
double tol_denorm_min(enum gd_dtype dtype);

/* One unit in the last place of y in dtype's precision: 2^(e - p + 1) for 2^e <= |y| <
 * 2^(e + 1), the subnormal spacing below the normal range. ulp(y) <= 2u|y| for normal y. */
double tol_ulp(double y, enum gd_dtype dtype);

/* gamma_n = n u / (1 - n u): the relative bound of n stacked roundings (Higham, "Accuracy
 * and Stability of Numerical Algorithms", 2nd ed., lemma 3.1). Infinite when n u >= 1. */
double tol_gamma(int64_t n, double u);

/* The libm functions the CPU ops call. */
enum tol_libm {
    TOL_EXP,
    TOL_EXPM1,
    TOL_LOG,
    TOL_LOG1P,
    TOL_TANH,
    TOL_ERF,
    TOL_ERFC,
    TOL_POW,
    /* the trigonometric and hyperbolic functions of the element-wise ops */
    TOL_SIN,
    TOL_COS,
    TOL_TAN,
    TOL_ASIN,
    TOL_ACOS,
    TOL_ATAN,
    TOL_SINH,
    TOL_COSH,
    TOL_ASINH,
    TOL_ACOSH,
    TOL_ATANH
};

/*
 * glibc's documented maximum error of fn, in ulps, for dtype (float32: the float function,
 * float64: the double one): sysdeps/x86_64/fpu/libm-test-ulps of glibc 2.36, the table of
 * the manual's "Errors in Math Functions". See docs/NUMERICS.md.
 */
double tol_libm_ulps(enum tol_libm fn, enum gd_dtype dtype);

/*
 * The bound on |computed - exact| for one output element of op, from the op's traits in
 * engine/core/ops.def, on a backend computing in dtype:
 *
 *   bound = (gamma_r(u) + 2 ulps u) mag + (r + ulps) denorm_min      (r = reduction_len)
 *
 * where the gamma term is left out for ops without a reduction, and mag is the op's
 * per-element magnitude: the sum of the magnitudes of the terms for the summing ops, |y|
 * for pointwise functions, and for the few ops with an internal condition number the
 * magnitude docs/NUMERICS.md defines (Softmax, LogSoftmax, BatchNormalization,
 * HardSigmoid, Gelu). 0 for the exact ops (ulps 0, no reduction).
 */
double tol_op_bound(enum gd_op op, int64_t reduction_len, enum gd_dtype dtype, double mag);

#endif
