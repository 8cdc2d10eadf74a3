/* check_op_act.c: the pointwise unary ops (engine/cpu/op_act.c) on cpu and cpu64. */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "tolerance.h"

/*
 * Notation of the bounds: y the exact result, y* the fixture's (|y* - y| <= 2^-53 |y|, added
 * to every bound as TOL_REF_REL |y*|), u the backend's unit roundoff, L(f) glibc's documented
 * error of libm function f in ulps (tolerance.c). A result within k ulps is within
 * 2k u |y|, since one ulp of y is at most 2u|y|. Every bound also allows 4 subnormal steps,
 * the absolute error floor of results that underflow (exp(-100) is a float32 subnormal).
 */
static double
x_of(const struct of_case *c, int64_t i)
{
    return of_get(c->in[0], i);
}

static double
y_of(const struct of_case *c, int k, int64_t i)
{
    return fabs(of_get(c->want[k], i));
}

static double
floor_of(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype)
{
    return TOL_REF_REL * y_of(c, k, i) + 4 * tol_denorm_min(dtype);
}

/* Relative bound: rel_u units of u times |y*|. */
static double
relative(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, double rel_u)
{
    return rel_u * tol_unit_roundoff(dtype) * y_of(c, k, i) + floor_of(c, k, i, dtype);
}

/* One correctly rounded operation on exact inputs: half an ulp of the exact result. */
static double
bound_rounded(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return 0.5 * tol_ulp(of_get(c->want[k], i), dtype) + floor_of(c, k, i, dtype);
}

/* One libm call on an exact input: L(f) ulps of the result. */
static double
bound_libm(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    enum tol_libm fn = *(const enum tol_libm *)user;
    return tol_libm_ulps(fn, dtype) * tol_ulp(of_get(c->want[k], i), dtype) +
           floor_of(c, k, i, dtype);
}

/* Elu, x <= 0: alpha * expm1(x): expm1 within 2 L(expm1) u, the product u. x > 0: y = x. */
static double
bound_elu(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    if (x_of(c, i) > 0)
        return 0;
    return relative(c, k, i, dtype, 2 * tol_libm_ulps(TOL_EXPM1, dtype) + 1);
}

/* Selu: gamma * x (u) for x > 0; gamma * (alpha * expm1(x)): 2 L(expm1) u + 2u. */
static double
bound_selu(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    if (x_of(c, i) > 0)
        return relative(c, k, i, dtype, 1);
    return relative(c, k, i, dtype, 2 * tol_libm_ulps(TOL_EXPM1, dtype) + 2);
}

/*
 * Sigmoid: 1 / (1 + e), e = exp(-x) (or e / (1 + e), e = exp(x), for x < 0). e is within
 * 2 L(exp) u; through 1 + e its error is weighted by e / (1 + e) <= 1; the addition and the
 * division add u each: (2 L(exp) + 2) u |y|.
 */
static double
bound_sigmoid(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return relative(c, k, i, dtype, 2 * tol_libm_ulps(TOL_EXP, dtype) + 2);
}

/*
 * Softplus = log(1 + e^x) = max(x, 0) + log1p(t), t = exp(-|x|): t within 2 L(exp) u moves
 * log1p(t) by at most 2 L(exp) u t / (1 + t) <= 2 L(exp) u log1p(t); log1p adds
 * 2 L(log1p) u; the final sum of two non-negative terms u:
 * (2 L(exp) + 2 L(log1p) + 1) u |y|.
 */
static double
bound_softplus(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return relative(c, k, i, dtype,
                    2 * tol_libm_ulps(TOL_EXP, dtype) + 2 * tol_libm_ulps(TOL_LOG1P, dtype) + 1);
}

/*
 * HardSigmoid = clamp(alpha x + beta, 0, 1): alpha x rounds (u |alpha x|), + beta rounds
 * (u |v|, v = alpha x + beta); clamping is 1-Lipschitz. (1 + u) u (|alpha x| + |v|), the
 * magnitude in mag0.npy.
 */
static double
bound_hard_sigmoid(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double u = tol_unit_roundoff(dtype);
    return (1 + u) * u * of_get(c->mag[k], i) + floor_of(c, k, i, dtype);
}

/*
 * HardSwish = x max(0, min(1, x/6 + 1/2)) = x max(0, min(6, x + 3)) / 6. In the second
 * form x + 3 is exact for -6 <= x <= -1.5 (Sterbenz) and within u elsewhere, then x * ()
 * and / 6 round: 3u |y|, relative even at the kink x = -3 where the first form cancels
 * (x/6 + 1/2 there loses every digit of x/6's rounding error, u/2 absolute, whatever y).
 */
static double
bound_hard_swish(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return relative(c, k, i, dtype, 3);
}

/*
 * Gelu (erf) = x/2 erfc(-z), z = x/sqrt(2): z is rounded twice (the constant and the
 * product), 2u relative, which moves erfc(-z) by cond 2u relative, cond = |z d/dz erfc(-z)
 * / erfc(-z)| = |z| (2/sqrt(pi)) e^(-z^2) / erfc(-z) (about 2 z^2 for z << 0, under 1 for
 * z >= 0); erfc adds 2 L(erfc) u, x/2 is exact, the product u:
 * (2 cond + 2 L(erfc) + 1) u |y|. With 1 + erf(z) instead, erf's own error (a few ulps of
 * 1) would be relative to 1 + erf(z), which vanishes as x -> -inf.
 */
static double
bound_gelu(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double x = x_of(c, i);
    double z = x * M_SQRT1_2;
    double cond = fabs(z) * M_2_SQRTPI * exp(-z * z) / erfc(-z);
    return relative(c, k, i, dtype, 2 * cond + 2 * tol_libm_ulps(TOL_ERFC, dtype) + 1);
}

/*
 * Gelu (tanh) = x/2 (1 + tanh(w)) = x / (1 + e^(-2w)), w = k (x + c x^3), k = sqrt(2/pi),
 * c = 0.044715. w: x*x, *x, c*, x+ (same signs), k* round and k and c are rounded
 * constants: 7u relative. e = exp(-2w) (or exp(2w) for w < 0, which cannot overflow) then
 * carries 7u |2w| + 2 L(exp) u, weighted in sigmoid(2w) by 1 - s, s = sigmoid(2w); then
 * 1 + e, the division and, for w < 0, the product x e round, 3u at most:
 * ((1 - s)(7 |2w| + 2 L(exp)) + 3) u |y|. Evaluated as 1 + tanh(w), tanh's error (ulps of
 * 1) would be relative to 1 + tanh(w) = 2s, which vanishes as x -> -inf.
 */
static double
bound_gelu_tanh(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double x = x_of(c, i);
    double w = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    double one_minus_s = 1 / (1 + exp(2 * w));
    double rel = one_minus_s * (7 * fabs(2 * w) + 2 * tol_libm_ulps(TOL_EXP, dtype)) + 3;
    return relative(c, k, i, dtype, rel);
}

static double
bound_gelu_any(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return of_attr_is(c, "approximate", "tanh") ? bound_gelu_tanh(c, k, i, dtype, user)
                                                : bound_gelu(c, k, i, dtype, user);
}

/* Tanh: one libm call, L(tanh) ulps. Exp, Log likewise. */
static enum tol_libm libm_tanh = TOL_TANH, libm_exp = TOL_EXP, libm_log = TOL_LOG;

/* Erf and the trigonometric and hyperbolic functions: one libm call each, L(f) ulps. */
static enum tol_libm libm_erf = TOL_ERF, libm_sin = TOL_SIN, libm_cos = TOL_COS, libm_tan = TOL_TAN,
                     libm_asin = TOL_ASIN, libm_acos = TOL_ACOS, libm_atan = TOL_ATAN,
                     libm_sinh = TOL_SINH, libm_cosh = TOL_COSH, libm_asinh = TOL_ASINH,
                     libm_acosh = TOL_ACOSH, libm_atanh = TOL_ATANH;

/*
 * Softsign = x / (1 + |x|): 1 + |x| rounds (1 + d1), the division (1 + d2); y' = y (1 + d2) /
 * (1 + d1), within gamma_2(u) = 2u / (1 - 2u) of y.
 */
static double
bound_softsign(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    return tol_gamma(2, tol_unit_roundoff(dtype)) * y_of(c, k, i) + floor_of(c, k, i, dtype);
}

/*
 * Celu, x <= 0: alpha expm1(x / alpha). x / alpha rounds (u relative), which expm1 passes on
 * scaled by its condition |z e^z / (e^z - 1)| <= 1 for z <= 0; expm1 adds 2 L(expm1) u, the
 * product u: (2 L(expm1) + 2) u |y|. x > 0 gives x itself.
 */
static double
bound_celu(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    if (x_of(c, i) > 0)
        return 0;
    return relative(c, k, i, dtype, 2 * tol_libm_ulps(TOL_EXPM1, dtype) + 2);
}

/*
 * Mish = x tanh(s), s = softplus(x) computed as in Softplus, within
 * (2 L(exp) + 2 L(log1p) + 1) u of s; tanh passes s's relative error on scaled by
 * s (1 - tanh(s)^2) / tanh(s) = 2s / sinh(2s) <= 1 and adds 2 L(tanh) u; the product u:
 * (2 L(exp) + 2 L(log1p) + 2 L(tanh) + 2) u |y|. Below x = -87 (float32) e^x and so t =
 * tanh(s) are subnormal: each of the three functions is then within L(f) subnormal steps,
 * absolute, and the product by x multiplies that by |x|, which the floor adds.
 */
static double
bound_mish(const struct of_case *c, int k, int64_t i, enum gd_dtype dtype, void *user)
{
    double le = tol_libm_ulps(TOL_EXP, dtype), ll = tol_libm_ulps(TOL_LOG1P, dtype);
    double lt = tol_libm_ulps(TOL_TANH, dtype);
    double x = x_of(c, i);
    double sub = isfinite(x) ? fabs(x) * (le + ll + lt) * tol_denorm_min(dtype) : 0;
    return relative(c, k, i, dtype, 2 * le + 2 * ll + 2 * lt + 2) + sub;
}

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* Relu, Floor, Ceil, Round, Sign, Abs, Neg and Clip select or copy: bitwise. */
static const struct of_op act_ops[] = {
    {"Relu", CASES("rep", "edge"), NULL, NULL},
    /* LeakyRelu: alpha * x, one correctly rounded product (alpha a float32 value). */
    {"LeakyRelu", CASES("rep", "default_alpha", "edge"), bound_rounded, NULL},
    {"Elu", CASES("rep", "alpha", "near_zero", "edge"), bound_elu, NULL},
    {"Selu", CASES("rep", "near_zero", "edge", "attrs"), bound_selu, NULL},
    {"Sigmoid", CASES("rep", "edge"), bound_sigmoid, NULL},
    {"Tanh", CASES("rep", "edge"), bound_libm, &libm_tanh},
    {"Softplus", CASES("rep", "edge"), bound_softplus, NULL},
    {"HardSigmoid", CASES("rep", "defaults", "edge"), bound_hard_sigmoid, NULL},
    {"HardSwish", CASES("rep", "near_kink"), bound_hard_swish, NULL},
    {"Gelu", CASES("rep", "negative", "edge", "tanh", "tanh_negative"), bound_gelu_any, NULL},
    {"Floor", CASES("rep", "edge"), NULL, NULL},
    {"Ceil", CASES("rep", "edge"), NULL, NULL},
    {"Round", CASES("rep", "edge"), NULL, NULL},
    /* Sign, Abs, Neg of integers wrap (|MIN| = MIN, -MIN = MIN): exact too. */
    {"Sign", CASES("rep", "edge", "int8", "int32", "int64", "uint8"), NULL, NULL},
    {"Abs", CASES("rep", "edge", "int8", "int32", "int64", "uint16"), NULL, NULL},
    {"Neg", CASES("rep", "edge", "int8", "int32", "int64"), NULL, NULL},
    /* Sqrt is correctly rounded (IEEE 754): half an ulp. */
    {"Sqrt", CASES("rep", "edge"), bound_rounded, NULL},
    {"Exp", CASES("rep", "edge"), bound_libm, &libm_exp},
    {"Log", CASES("rep", "edge"), bound_libm, &libm_log},
    {"Clip", CASES("rep", "inputs", "min_only", "max_only", "edge", "no_bounds"), NULL, NULL},
    {"Erf", CASES("rep", "edge"), bound_libm, &libm_erf},
    /* Reciprocal: 1 / x, one correctly rounded division; Shrink: x -+ bias, one addition. */
    {"Reciprocal", CASES("rep", "edge"), bound_rounded, NULL},
    {"Softsign", CASES("rep", "edge"), bound_softsign, NULL},
    /* ThresholdedRelu selects x or 0: bitwise. */
    {"ThresholdedRelu", CASES("rep", "alpha", "edge"), NULL, NULL},
    {"Sin", CASES("rep", "edge"), bound_libm, &libm_sin},
    {"Cos", CASES("rep", "edge"), bound_libm, &libm_cos},
    {"Tan", CASES("rep", "edge"), bound_libm, &libm_tan},
    {"Asin", CASES("rep", "edge"), bound_libm, &libm_asin},
    {"Acos", CASES("rep", "edge"), bound_libm, &libm_acos},
    {"Atan", CASES("rep", "edge"), bound_libm, &libm_atan},
    {"Sinh", CASES("rep", "edge"), bound_libm, &libm_sinh},
    {"Cosh", CASES("rep", "edge"), bound_libm, &libm_cosh},
    {"Asinh", CASES("rep", "edge"), bound_libm, &libm_asinh},
    {"Acosh", CASES("rep", "edge"), bound_libm, &libm_acosh},
    {"Atanh", CASES("rep", "edge"), bound_libm, &libm_atanh},
    {"Celu", CASES("rep", "alpha", "alpha_small", "edge"), bound_celu, NULL},
    {"Shrink", CASES("rep", "hard", "defaults", "bias_differs", "edge"), bound_rounded, NULL},
    {"Mish", CASES("rep", "edge", "subnormal_outside_trait"), bound_mish, NULL},
};
/* clang-format on */

int
main(void)
{
    return of_main("op_act", act_ops, (int)(sizeof act_ops / sizeof act_ops[0]));
}
