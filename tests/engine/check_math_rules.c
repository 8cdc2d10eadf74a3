/*
 * check_math_rules.c: the float32 functions of engine/core/math_rules.h (what `cpu` and
 * `cuda --repro bitwise` compute) against long double libm, the reference (64-bit
 * significand, its functions within a few units of 2^-64: error-free at float's scale).
 *
 * Each function is swept over every STRIDE-th float32 bit pattern (both signs, every
 * exponent: the sweep is dense in the logarithm of |x|), plus the special values; pow over
 * a grid of x by y. For every input the error is |got - ref| / ulp(ref) with ulp the
 * float32 unit at ref (2^-149 below the normal range); the test fails when any exceeds
 * MAX_ULP (1: the functions are within 0.5 + 2^-12 ulp by construction, see math_rules.h)
 * and prints, per function, the largest error seen, where, and how many results were not the
 * correctly rounded float. NaN must give NaN, a reference that rounds to an infinity that
 * infinity, an exact zero that zero with its sign. GD_MATH_STRIDE=N sets the stride (default
 * 4093; 1 is every float, hours), the figures of docs/NUMERICS.md came from a denser run.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/core/math_rules.h"

#define MAX_ULP 1.0

typedef float (*f1_fn)(float);
typedef long double (*ref1_fn)(long double);

struct fn1 {
    const char *name;
    f1_fn got;
    ref1_fn ref;
};

/* long double versions of the compositions that libm has no single function for */
static long double
ref_exp(long double x)
{
    return expl(x);
}

static const struct fn1 fns[] = {
    {"exp", gd__expf, ref_exp},    {"expm1", gd__expm1f, expm1l}, {"log", gd__logf, logl},
    {"log1p", gd__log1pf, log1pl}, {"tanh", gd__tanhf, tanhl},    {"erf", gd__erff, erfl},
    {"erfc", gd__erfcf, erfcl},    {"sin", gd__sinf, sinl},       {"cos", gd__cosf, cosl},
    {"tan", gd__tanf, tanl},       {"asin", gd__asinf, asinl},    {"acos", gd__acosf, acosl},
    {"atan", gd__atanf, atanl},    {"sinh", gd__sinhf, sinhl},    {"cosh", gd__coshf, coshl},
    {"asinh", gd__asinhf, asinhl}, {"acosh", gd__acoshf, acoshl}, {"atanh", gd__atanhf, atanhl},
};
#define N_FNS ((int)(sizeof fns / sizeof fns[0]))

static float
from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t
bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The float32 unit at |r|: 2^(e - 23) for 2^e <= |r| < 2^(e+1), 2^-149 below 2^-126. */
static long double
ulp_at(long double r)
{
    r = fabsl(r);
    if (r < (long double)FLT_MIN)
        return ldexpl(1.0L, -149);
    int e;
    frexpl(r, &e); /* r = f 2^e, f in [0.5, 1) */
    return ldexpl(1.0L, e - 1 - 23);
}

struct tally {
    double max_ulp;
    float worst_x, worst_y, worst_got;
    long double worst_ref;
    int64_t n, not_rounded, bad;
};

/* One comparison; returns 1 when it breaks a rule (special values) or MAX_ULP. */
static int
judge(struct tally *t, float x, float y, float got, long double ref)
{
    t->n++;
    int broken = 0;
    double ulps = 0;
    if (isnan(ref)) {
        broken = !isnan(got);
    } else if (isinf((float)ref)) {
        broken = !(got == (float)ref);
    } else if (ref == 0) {
        broken = !(got == 0 && !signbit(got) == !signbit(ref));
    } else if (isnan(got) || isinf(got)) {
        broken = 1;
    } else {
        ulps = (double)(fabsl((long double)got - ref) / ulp_at(ref));
        broken = ulps > MAX_ULP;
        t->not_rounded += got != (float)ref;
    }
    if (broken)
        ulps = INFINITY;
    if (ulps > t->max_ulp || (broken && t->bad == 0)) {
        t->max_ulp = ulps > t->max_ulp ? ulps : t->max_ulp;
        t->worst_x = x;
        t->worst_y = y;
        t->worst_got = got;
        t->worst_ref = ref;
    }
    t->bad += broken;
    return broken;
}

static uint32_t
stride(void)
{
    const char *s = getenv("GD_MATH_STRIDE");
    long v = s != NULL ? atol(s) : 0;
    return v > 0 ? (uint32_t)v : 4093u;
}

static const float specials[] = {0.0f,       -0.0f,      1.0f,    -1.0f,       0.5f,    -0.5f,
                                 2.0f,       -2.0f,      FLT_MIN, -FLT_MIN,    FLT_MAX, -FLT_MAX,
                                 1e-45f,     -1e-45f,    88.72f,  -87.3f,      -103.9f, 1.5707964f,
                                 3.1415927f, 6.2831855f, 1e10f,   16777216.0f, 3e38f,   0.9999999f,
                                 1.0000001f, 0.55f,      2.5f,    10.05f,      -3.0f,   0.35f,
                                 -0.35f,     1.0e-8f,    709.0f,  -745.0f};

START_TEST(test_function)
{
    const struct fn1 *f = &fns[_i];
    struct tally t = {0};
    uint32_t s = stride();
    for (uint64_t u = 0; u <= 0xffffffffull; u += s) {
        float x = from_bits((uint32_t)u);
        judge(&t, x, 0, f->got(x), f->ref((long double)x));
    }
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        judge(&t, specials[i], 0, f->got(specials[i]), f->ref((long double)specials[i]));
    float inf = from_bits(0x7f800000u), nan = from_bits(0x7fc00000u);
    judge(&t, inf, 0, f->got(inf), f->ref((long double)inf));
    judge(&t, -inf, 0, f->got(-inf), f->ref((long double)-inf));
    judge(&t, nan, 0, f->got(nan), f->ref((long double)nan));
    fprintf(stderr,
            "%-6s %9lld inputs: max %.4f ulp (at x = %.9g: %.9g, reference %.12Lg), %lld not "
            "correctly rounded\n",
            f->name, (long long)t.n, t.max_ulp, t.worst_x, t.worst_got, t.worst_ref,
            (long long)t.not_rounded);
    ck_assert_msg(t.bad == 0,
                  "%s: %lld results break a rule or exceed %.1f ulp; first/worst at "
                  "x = %.9g (bits 0x%08x): %.9g, reference %.17Lg",
                  f->name, (long long)t.bad, MAX_ULP, t.worst_x, bits_of(t.worst_x), t.worst_got,
                  t.worst_ref);
}
END_TEST

/* pow over x from a stride of the bit patterns of positive and negative x, by y from a set
 * of integers, halves and a stride of the positive and negative patterns */
START_TEST(test_pow)
{
    struct tally t = {0};
    uint32_t s = stride() * 257u;
    float ys[96];
    int ny = 0;
    const float fixed[] = {0.0f,  -0.0f, 1.0f,   -1.0f, 2.0f,        -2.0f,
                           3.0f,  -3.0f, 0.5f,   -0.5f, 1.5f,        0.75f,
                           10.0f, -7.0f, 127.0f, 1e-3f, 16777217.0f, 33554432.0f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        ys[ny++] = fixed[i];
    for (uint64_t u = 0x30000000u; u < 0x43000000u && ny < 96; u += 0x00c00000u) {
        ys[ny++] = from_bits((uint32_t)u);
        ys[ny++] = -from_bits((uint32_t)u);
    }
    for (uint64_t u = 0; u <= 0xffffffffull; u += s)
        for (int k = 0; k < ny; k++) {
            float x = from_bits((uint32_t)u);
            judge(&t, x, ys[k], gd__powf(x, ys[k]), powl((long double)x, (long double)ys[k]));
        }
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        for (int k = 0; k < ny; k++)
            judge(&t, specials[i], ys[k], gd__powf(specials[i], ys[k]),
                  powl((long double)specials[i], (long double)ys[k]));
    fprintf(stderr,
            "pow    %9lld inputs: max %.4f ulp (at x = %.9g, y = %.9g: %.9g, reference %.12Lg), "
            "%lld not correctly rounded\n",
            (long long)t.n, t.max_ulp, t.worst_x, t.worst_y, t.worst_got, t.worst_ref,
            (long long)t.not_rounded);
    ck_assert_msg(t.bad == 0,
                  "pow: %lld results break a rule or exceed %.1f ulp; at x = %.9g, "
                  "y = %.9g: %.9g, reference %.17Lg",
                  (long long)t.bad, MAX_ULP, t.worst_x, t.worst_y, t.worst_got, t.worst_ref);
}
END_TEST

/* C99's special cases of pow that long double powl has too, spelled out */
START_TEST(test_pow_specials)
{
    float inf = from_bits(0x7f800000u), nan = from_bits(0x7fc00000u);
    ck_assert(gd__powf(nan, 0.0f) == 1.0f);
    ck_assert(gd__powf(1.0f, nan) == 1.0f);
    ck_assert(gd__powf(-1.0f, inf) == 1.0f);
    ck_assert(isnan(gd__powf(-2.0f, 0.5f)));
    ck_assert(gd__powf(-0.0f, -3.0f) == -inf);
    ck_assert(gd__powf(-0.0f, 3.0f) == 0.0f && signbit(gd__powf(-0.0f, 3.0f)));
    ck_assert(gd__powf(-inf, 3.0f) == -inf);
    ck_assert(gd__powf(-8.0f, 1.0f / 3.0f) != gd__powf(-8.0f, 1.0f / 3.0f)); /* NaN */
    ck_assert(gd__powf(2.0f, 10.0f) == 1024.0f);
    ck_assert(gd__powf(-2.0f, 3.0f) == -8.0f);
}
END_TEST

/* The exact ones are the IEEE operations, and the NaN made is one pattern on every machine. */
START_TEST(test_exact_and_nan)
{
    ck_assert(gd__sqrtf(2.0f) == sqrtf(2.0f));
    ck_assert(gd__fabsf(-0.0f) == 0.0f && !signbit(gd__fabsf(-0.0f)));
    ck_assert(gd__rintf(2.5f) == 2.0f && gd__rintf(-3.5f) == -4.0f);
    ck_assert(gd__fmodf(7.5f, 2.0f) == 1.5f);
    ck_assert_uint_eq(bits_of(gd__logf(-1.0f)), 0x7fc00000u);
    ck_assert_uint_eq(bits_of(gd__expf(from_bits(0xffc00001u))), 0x7fc00000u);
    ck_assert_uint_eq(bits_of(gd__acosf(2.0f)), 0x7fc00000u);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("math_rules");
    TCase *tc = tcase_create("sweeps");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_function, 0, N_FNS);
    tcase_add_test(tc, test_pow);
    tcase_add_test(tc, test_pow_specials);
    tcase_add_test(tc, test_exact_and_nan);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
