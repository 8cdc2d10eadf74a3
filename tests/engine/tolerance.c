/* tolerance.c: unit roundoff, ulps, gamma_n, libm error figures and the trait bound. */
#include <float.h>
#include <math.h>

#include "tolerance.h"

double
tol_unit_roundoff(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F32:
        return 0x1p-24;
    case GD_F64:
        return 0x1p-53;
    case GD_F16:
        return 0x1p-11;
    case GD_BF16:
        return 0x1p-8;
    default:
        return 0;
    }
}

double
tol_denorm_min(enum gd_dtype dtype)
{
    switch (dtype) {
    case GD_F32:
        return 0x1p-149;
    case GD_F64:
        return 0x1p-1074;
    case GD_F16:
        return 0x1p-24;
    case GD_BF16:
        return 0x1p-133;
    default:
        return 0;
    }
}

double
tol_ulp(double y, enum gd_dtype dtype)
{
    int p; /* significand bits, the hidden one included */
    double min_normal;
    switch (dtype) {
    case GD_F32:
        p = 24, min_normal = FLT_MIN;
        break;
    case GD_F64:
        p = 53, min_normal = DBL_MIN;
        break;
    case GD_F16:
        p = 11, min_normal = 0x1p-14;
        break;
    case GD_BF16:
        p = 8, min_normal = FLT_MIN;
        break;
    default:
        return 0;
    }
    y = fabs(y);
    if (!isfinite(y))
        return INFINITY;
    if (y < min_normal)
        return tol_denorm_min(dtype);
    int e;
    frexp(y, &e); /* y = m 2^e, 0.5 <= m < 1: the binade is [2^(e-1), 2^e) */
    return ldexp(1.0, e - p);
}

double
tol_gamma(int64_t n, double u)
{
    double nu = (double)n * u;
    return nu < 1 ? nu / (1 - nu) : INFINITY;
}

double
tol_libm_ulps(enum tol_libm fn, enum gd_dtype dtype)
{
    /* glibc 2.36, sysdeps/x86_64/fpu/libm-test-ulps: "float" and "double" lines of exp,
     * expm1, log, log1p, tanh, erf, erfc, pow (round-to-nearest). */
    static const double f32[] = {[TOL_EXP] = 1,  [TOL_EXPM1] = 1, [TOL_LOG] = 1,  [TOL_LOG1P] = 1,
                                 [TOL_TANH] = 2, [TOL_ERF] = 1,   [TOL_ERFC] = 3, [TOL_POW] = 1};
    static const double f64[] = {[TOL_EXP] = 1,  [TOL_EXPM1] = 1, [TOL_LOG] = 1,  [TOL_LOG1P] = 1,
                                 [TOL_TANH] = 2, [TOL_ERF] = 1,   [TOL_ERFC] = 5, [TOL_POW] = 1};
    /* The same table's lines of sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh
     * and atanh, as the manual's table (and docs/CUDA_KERNELS.md) quotes them. */
    static const double trig[] = {[TOL_SIN] = 1,   [TOL_COS] = 1,   [TOL_TAN] = 1,  [TOL_ASIN] = 1,
                                  [TOL_ACOS] = 1,  [TOL_ATAN] = 1,  [TOL_SINH] = 2, [TOL_COSH] = 2,
                                  [TOL_ASINH] = 2, [TOL_ACOSH] = 2, [TOL_ATANH] = 2};
    if (fn >= TOL_SIN)
        return trig[fn]; /* float and double alike */
    return dtype == GD_F64 ? f64[fn] : f32[fn];
}

double
tol_op_bound(enum gd_op op, int64_t reduction_len, enum gd_dtype dtype, double mag)
{
    const struct gd_op_info *info = gd_op_info(op);
    double u = tol_unit_roundoff(dtype);
    double sum = info->reduction == GD_RED_NONE ? 0 : tol_gamma(reduction_len, u);
    double rounding = 2.0 * info->ulps * u; /* k ulps of y <= 2 k u |y| <= 2 k u mag */
    if (sum == 0 && rounding == 0)
        return 0;
    int64_t terms = info->reduction == GD_RED_NONE ? 0 : reduction_len;
    return (sum + rounding) * mag + (double)(terms + info->ulps) * tol_denorm_min(dtype);
}
