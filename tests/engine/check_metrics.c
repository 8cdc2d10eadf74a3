/* check_metrics.c: tests of engine/compare/metrics.c against hand-computed values. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/metrics.h"

/* The vectorized float32 path works on blocks of this many elements (metrics.c BLOCK). */
#define FAST_BLOCK 4096

static float
f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static double
f64_of(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Measures n elements of raw data as 1-D tensors; fails the test on an error. */
static struct gd_metrics
measure(enum gd_dtype dtype, const void *a, const void *b, int64_t n, double atol, double rtol)
{
    struct gd_err err = {0};
    struct gd_tensor *ta = gd_tensor_wrap(dtype, 1, &n, (void *)a, &err);
    struct gd_tensor *tb = gd_tensor_wrap(dtype, 1, &n, (void *)b, &err);
    ck_assert_ptr_nonnull(ta);
    ck_assert_ptr_nonnull(tb);
    struct gd_metrics m;
    int rc = gd_metrics_compute(ta, tb, atol, rtol, &m, &err);
    ck_assert_msg(rc == 0, "gd_metrics_compute: %d %s", rc, err.msg);
    gd_tensor_free(ta);
    gd_tensor_free(tb);
    return m;
}

static struct gd_metrics
pair_f32(uint32_t a_bits, uint32_t b_bits)
{
    float a = f32_of(a_bits), b = f32_of(b_bits);
    return measure(GD_F32, &a, &b, 1, 1e-8, 1e-5);
}

static struct gd_metrics
pair_u16(enum gd_dtype dtype, uint16_t a, uint16_t b, double atol, double rtol)
{
    return measure(dtype, &a, &b, 1, atol, rtol);
}

/* Sum of a histogram, to check it covers what it should. */
static int64_t
hist_total(const int64_t *h, int n)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++)
        t += h[i];
    return t;
}

/* rel_hist bin of rel in [2^e, 2^(e+1)). */
static int
rel_bin(int e)
{
    return 1 + e - GD_METRICS_REL_EXP_MIN;
}

START_TEST(test_ulp_f32)
{
    struct gd_metrics m;

    /* -2^-149 vs +2^-149: one step from each to zero, 2 ULP; bin 2 is [2, 4). */
    m = pair_f32(0x80000001u, 0x00000001u);
    ck_assert_uint_eq(m.ulp_max, 2);
    ck_assert_int_eq(m.ulp_max_index, 0);
    ck_assert_int_eq(m.ulp_hist[2], 1);
    ck_assert_double_eq(m.abs_max, 0x1p-148);

    /* -0.0 vs +0.0: equal values (0 ULP, close), different bytes; b == 0 and a == 0. */
    m = pair_f32(0x80000000u, 0x00000000u);
    ck_assert_uint_eq(m.ulp_max, 0);
    ck_assert_int_eq(m.ulp_hist[0], 1);
    ck_assert_int_eq(m.n_bits_differ, 1);
    ck_assert_int_eq(m.bitwise_equal, 0);
    ck_assert_int_eq(m.n_mismatch, 0);
    ck_assert_int_eq(m.n_ref_zero, 1);
    ck_assert_int_eq(m.n_ref_zero_diff, 0);
    ck_assert_int_eq(m.n_rel, 0);

    /* Smallest subnormal vs 0: 1 ULP; the reference is 0 and a is not. */
    m = pair_f32(0x00000001u, 0x00000000u);
    ck_assert_uint_eq(m.ulp_max, 1);
    ck_assert_int_eq(m.ulp_hist[1], 1);
    ck_assert_int_eq(m.n_ref_zero_diff, 1);

    /* FLT_MAX vs its lower neighbour: 1 ULP = 2^(127-23) = 2^104. */
    m = pair_f32(0x7f7fffffu, 0x7f7ffffeu);
    ck_assert_uint_eq(m.ulp_max, 1);
    ck_assert_double_eq(m.abs_max, 0x1p104);

    /* FLT_MAX vs -FLT_MAX: 2 * 0x7f7fffff = 4278190078 ULP, >= 2^31 so bin 32. |a-b| is
     * 2 FLT_MAX in float64, rel exactly 2 (bin of 2^1); float32 a-b overflows, not close. */
    m = pair_f32(0x7f7fffffu, 0xff7fffffu);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(4278190078));
    ck_assert_int_eq(m.ulp_hist[32], 1);
    ck_assert_double_eq(m.abs_max, 2.0 * (double)FLT_MAX);
    ck_assert_double_eq(m.rel_max, 2.0);
    ck_assert_int_eq(m.rel_hist[rel_bin(1)], 1);
    ck_assert_int_eq(m.n_mismatch, 1);

    /* 2.0 vs 1.0: 0x40000000 - 0x3f800000 = 2^23 ULP, bin 24 is [2^23, 2^24). */
    m = pair_f32(0x40000000u, 0x3f800000u);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(8388608));
    ck_assert_int_eq(m.ulp_hist[24], 1);
}
END_TEST

START_TEST(test_nonfinite)
{
    float a[8] = {NAN, NAN, 1.0f, INFINITY, INFINITY, INFINITY, -INFINITY, 2.0f};
    float b[8] = {NAN, 1.0f, NAN, INFINITY, -INFINITY, 1.0f, -INFINITY, 3.0f};
    struct gd_metrics m = measure(GD_F32, a, b, 8, 1e-8, 1e-5);
    ck_assert_int_eq(m.count, 8);
    ck_assert_int_eq(m.a_nan, 2);         /* 0, 1 */
    ck_assert_int_eq(m.b_nan, 2);         /* 0, 2 */
    ck_assert_int_eq(m.nan_both, 1);      /* 0 */
    ck_assert_int_eq(m.nan_disagree, 2);  /* 1, 2 */
    ck_assert_int_eq(m.a_inf, 4);         /* 3, 4, 5, 6 */
    ck_assert_int_eq(m.b_inf, 3);         /* 3, 4, 6 */
    ck_assert_int_eq(m.inf_both, 2);      /* 3, 6 */
    ck_assert_int_eq(m.inf_disagree, 2);  /* 4 (+Inf vs -Inf), 5 (Inf vs 1) */
    ck_assert_int_eq(m.n_finite, 1);      /* 7 */
    /* Not close: 0 (NaN never is), 1, 2, 4, 5, and 7 (|2-3| = 1 > 1e-8 + 3e-5). */
    ck_assert_int_eq(m.n_mismatch, 6);
    ck_assert_int_eq(m.mismatch_first_index, 0);
    /* The same NaN bits at 0, the same infinities at 3 and 6. */
    ck_assert_int_eq(m.n_bits_differ, 5);
    /* Error statistics cover element 7 only: 2 vs 3, 2^22 ULP (bin 23), rel 1/3 (bin of
     * 2^-2). */
    ck_assert_double_eq(m.abs_max, 1.0);
    ck_assert_int_eq(m.abs_max_index, 7);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(4194304));
    ck_assert_int_eq(m.ulp_max_index, 7);
    ck_assert_int_eq(m.ulp_hist[23], 1);
    ck_assert_int_eq(hist_total(m.ulp_hist, GD_METRICS_ULP_BINS), 1);
    ck_assert_int_eq(m.n_rel, 1);
    ck_assert_double_eq(m.rel_max, 1.0 / 3.0);
    ck_assert_int_eq(m.rel_hist[rel_bin(-2)], 1);
    ck_assert_double_eq(m.abs_mean, 1.0);
}
END_TEST

START_TEST(test_16bit_floats)
{
    struct gd_metrics m;

    /* float16 1.0 (0x3c00) vs 0x3c01 = 1 + 2^-10: 1 ULP, |a-b| = rel = 2^-10. */
    m = pair_u16(GD_F16, 0x3c01, 0x3c00, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 1);
    ck_assert_double_eq(m.abs_max, 0x1p-10);
    ck_assert_double_eq(m.rel_max, 0x1p-10);
    ck_assert_int_eq(m.rel_hist[rel_bin(-10)], 1);
    ck_assert_int_eq(m.n_mismatch, 1);

    /* float16 -2^-24 vs +2^-24 (smallest subnormals): 2 ULP across zero. */
    m = pair_u16(GD_F16, 0x8001, 0x0001, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 2);

    /* float16 +Inf vs 65504 (the largest finite): an Inf disagreement. */
    m = pair_u16(GD_F16, 0x7c00, 0x7bff, 1e-8, 1e-5);
    ck_assert_int_eq(m.inf_disagree, 1);
    ck_assert_int_eq(m.a_inf, 1);
    ck_assert_int_eq(m.n_finite, 0);
    ck_assert_int_eq(m.n_mismatch, 1);

    /* float16 NaN vs the same NaN: agreeing NaNs, still not close (equal_nan=False). */
    m = pair_u16(GD_F16, 0x7e00, 0x7e00, 1e-8, 1e-5);
    ck_assert_int_eq(m.nan_both, 1);
    ck_assert_int_eq(m.n_mismatch, 1);
    ck_assert_int_eq(m.n_bits_differ, 0);

    /* numpy evaluates float16 in float16: rtol = 9.7655e-4 is 1.25e-8 below 2^-10, less
     * than half the float16 spacing there (2^-21 = 4.8e-7), so it rounds to 2^-10 and
     * |a-b| = 2^-10 <= 2^-10 is close, although in float64 2^-10 = 9.765625e-4 > 9.7655e-4.
     * numpy 1.24: np.isclose(f16(0x3c01), f16(0x3c00), rtol=9.7655e-4, atol=0) is True. */
    m = pair_u16(GD_F16, 0x3c01, 0x3c00, 0.0, 9.7655e-4);
    ck_assert_int_eq(m.n_mismatch, 0);

    /* bfloat16 1.0 (0x3f80) vs 0x3f82 = 1 + 2^-6: 2 ULP (the mantissa has 7 bits), |a-b| =
     * rel = 2^-6. */
    m = pair_u16(GD_BF16, 0x3f82, 0x3f80, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 2);
    ck_assert_int_eq(m.ulp_hist[2], 1);
    ck_assert_double_eq(m.abs_max, 0x1p-6);
    ck_assert_double_eq(m.rel_max, 0x1p-6);
    ck_assert_int_eq(m.rel_hist[rel_bin(-6)], 1);

    /* bfloat16 -0.0 vs +0.0. */
    m = pair_u16(GD_BF16, 0x8000, 0x0000, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 0);
    ck_assert_int_eq(m.n_bits_differ, 1);
}
END_TEST

/* numpy's float16 arithmetic: each operation in float32, rounded to the format. */
static float
round16(enum gd_dtype dtype, float x)
{
    return dtype == GD_F16 ? gd_f16_to_f32(gd_f32_to_f16(x)) : gd_bf16_to_f32(gd_f32_to_bf16(x));
}

static float
value16(enum gd_dtype dtype, uint16_t h)
{
    return dtype == GD_F16 ? gd_f16_to_f32(h) : gd_bf16_to_f32(h);
}

/*
 * isclose over many 16-bit pairs near the bound (a = b + k ULP, |k| <= 8, and a tolerance
 * of about 3 ULP), counted here operation by operation as numpy computes float16:
 * |h(a - b)| <= h(atol + h(rtol * |b|)). atol and rtol are exact in both formats.
 */
START_TEST(test_16bit_isclose_random)
{
    enum gd_dtype dtypes[2] = {GD_F16, GD_BF16};
    for (int d = 0; d < 2; d++) {
        enum gd_dtype dtype = dtypes[d];
        double rtol = dtype == GD_F16 ? 3 * 0x1p-10 : 3 * 0x1p-7, atol = 0x1p-20;
        enum { N = 20000 };
        uint16_t a[N], b[N];
        uint64_t s = 12345;
        int64_t expected = 0;
        for (int i = 0; i < N; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            /* magnitudes from subnormal to large, both signs; never Inf or NaN */
            uint16_t exp_max = dtype == GD_F16 ? 30 : 250;
            uint16_t shift = dtype == GD_F16 ? 10 : 7;
            uint16_t mant = (uint16_t)((s >> 20) & ((1u << shift) - 1));
            uint16_t bits = (uint16_t)((((s >> 8) % exp_max) << shift) | mant);
            bits |= (uint16_t)((s >> 40) & 1) << 15;
            int k = (int)((s >> 44) % 17) - 8;
            b[i] = bits;
            a[i] = (uint16_t)(bits + k); /* stays finite: exponents stop short of the top */
            float fa = value16(dtype, a[i]), fb = value16(dtype, b[i]);
            float diff = fabsf(round16(dtype, fa - fb));
            float bound = round16(dtype, (float)atol + round16(dtype, (float)rtol * fabsf(fb)));
            expected += !(diff <= bound);
        }
        struct gd_metrics m = measure(dtype, a, b, N, atol, rtol);
        ck_assert_msg(m.n_mismatch == expected, "%s: %lld not close, expected %lld",
                      gd_dtype_name(dtype), (long long)m.n_mismatch, (long long)expected);
        ck_assert_msg(expected > N / 10 && expected < N - N / 10, "%s: only %lld not close",
                      gd_dtype_name(dtype), (long long)expected);
    }
}
END_TEST

START_TEST(test_float64)
{
    struct gd_metrics m;
    double a, b;

    /* -2^-1074 vs +2^-1074: 2 ULP. */
    a = f64_of(UINT64_C(0x8000000000000001));
    b = f64_of(UINT64_C(0x0000000000000001));
    m = measure(GD_F64, &a, &b, 1, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 2);

    /* 1 + 2^-52 vs 1: 1 ULP, rel 2^-52. */
    a = 1.0 + 0x1p-52;
    b = 1.0;
    m = measure(GD_F64, &a, &b, 1, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 1);
    ck_assert_double_eq(m.rel_max, 0x1p-52);
    ck_assert_int_eq(m.rel_hist[rel_bin(-52)], 1);
    ck_assert_int_eq(m.n_mismatch, 0);

    /* DBL_MAX vs -DBL_MAX: 2 * 0x7fefffffffffffff ULP, >= 2^63 so bin 64. */
    a = DBL_MAX;
    b = -DBL_MAX;
    m = measure(GD_F64, &a, &b, 1, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(0xffdffffffffffffe));
    ck_assert_int_eq(m.ulp_hist[64], 1);

    /* -0.0 vs +0.0. */
    a = -0.0;
    b = 0.0;
    m = measure(GD_F64, &a, &b, 1, 1e-8, 1e-5);
    ck_assert_uint_eq(m.ulp_max, 0);
    ck_assert_int_eq(m.n_bits_differ, 1);

    /* isclose in float64: |1.00001 - 1| = 1.0000000000065512e-5 <= 1e-8 + 1e-5 = 1.001e-5
     * is close; |1.0001 - 1| = 1e-4 is not. */
    double av[2] = {1.00001, 1.0001}, bv[2] = {1.0, 1.0};
    m = measure(GD_F64, av, bv, 2, 1e-8, 1e-5);
    ck_assert_int_eq(m.n_mismatch, 1);
    ck_assert_int_eq(m.mismatch_first_index, 1);
}
END_TEST

START_TEST(test_isclose_numpy)
{
    /* atol 1e-8, rtol 1e-5, evaluated in float32 as numpy does:
     * 0: 1 vs 1, equal.
     * 1: 1.0001f = 1 + 839 * 2^-23 = 1.00010001659..., |a-b| = 1.00010001659e-4 (exact),
     *    bound ~ 1.001e-5: not close.
     * 2: 100 vs 100.001f = 100 + 131 * 2^-17 = 100.00099945068..., |a-b| = 9.9945068e-4,
     *    bound = 1e-8 + 1e-5 * 100.001 ~ 1.00002e-3: close.
     * 3: 0 vs 1e-9: 1e-9 <= 1e-8 + 1e-14: close.
     * 4: -2 vs 2: 4 > 2e-5: not close.
     * numpy 1.24: np.isclose(a, b) is [T, F, T, T, F]. */
    float a[5] = {1.0f, 1.0001f, 100.0f, 0.0f, -2.0f};
    float b[5] = {1.0f, 1.0f, 100.001f, 1e-9f, 2.0f};
    struct gd_metrics m = measure(GD_F32, a, b, 5, 1e-8, 1e-5);
    ck_assert_int_eq(m.n_mismatch, 2);
    ck_assert_int_eq(m.mismatch_first_index, 1);

    /* a = 0x322bd344 (1.0001546e-8), b = 0x2bd9999a (1.546141e-12): a - b in float32 rounds
     * to 0x322bcc77 = float32(1e-8), and float32(1e-5) * b (1.5e-17) is under half an ULP
     * of it, so the float32 bound is float32(1e-8) too: close (numpy says True). In float64
     * |a-b| = 1.00000001168e-8 > 1.0000000015e-8 would not be close. */
    float a2 = f32_of(0x322bd344u), b2 = f32_of(0x2bd9999au);
    m = measure(GD_F32, &a2, &b2, 1, 1e-8, 1e-5);
    ck_assert_int_eq(m.n_mismatch, 0);
    ck_assert_int_eq(m.mismatch_first_index, -1);
}
END_TEST

START_TEST(test_cosine_sqnr)
{
    /* a = (1, 2, 3), b = (1, 2, 2): a.b = 11, |a| = sqrt(14), |b| = 3, so cos =
     * 11 / (3 sqrt 14) = 0.97995788701222274384...; sum b^2 = 9, sum (a-b)^2 = 1, so SQNR =
     * 10 log10 9 = 9.54242509439324874590... dB; |a-b| = (0, 0, 1): mean 1/3, RMS sqrt(1/3)
     * = 0.57735026918962576450... */
    float a[3] = {1, 2, 3}, b[3] = {1, 2, 2};
    struct gd_metrics m = measure(GD_F32, a, b, 3, 1e-8, 1e-5);
    ck_assert_double_eq_tol(m.cosine, 0.97995788701222274384, 1e-15);
    ck_assert_double_eq_tol(m.cosine_distance, 0.02004211298777725616, 1e-15);
    ck_assert_double_eq_tol(m.sqnr_db, 9.54242509439324874590, 1e-13);
    ck_assert_double_eq_tol(m.abs_mean, 1.0 / 3.0, 1e-16);
    ck_assert_double_eq_tol(m.rms, 0.57735026918962576450, 1e-16);

    /* Orthogonal: cos 0. Opposite: cos -1 (to a few float64 roundings: sqrt 5 squared is
     * not 5), sum b^2 = 5, sum (a-b)^2 = 4 + 16 = 20, SQNR 10 log10(1/4) =
     * -6.02059991327962390427 dB. */
    double o1[2] = {1, 0}, o2[2] = {0, 1};
    m = measure(GD_F64, o1, o2, 2, 0, 0);
    ck_assert_double_eq_tol(m.cosine, 0.0, 1e-16);
    double p1[2] = {1, -2}, p2[2] = {-1, 2};
    m = measure(GD_F64, p1, p2, 2, 0, 0);
    ck_assert_double_eq_tol(m.cosine, -1.0, 1e-15);
    ck_assert_double_eq_tol(m.sqnr_db, -6.02059991327962390427, 1e-13);

    /* Identical: cos 1, SQNR +inf. A zero reference with a nonzero a: cos 0, SQNR -inf. */
    m = measure(GD_F64, p1, p1, 2, 0, 0);
    ck_assert_double_eq(m.cosine, 1.0);
    ck_assert(isinf(m.sqnr_db) && m.sqnr_db > 0);
    double z[2] = {0, 0};
    m = measure(GD_F64, p1, z, 2, 0, 0);
    ck_assert_double_eq(m.cosine, 0.0);
    ck_assert(isinf(m.sqnr_db) && m.sqnr_db < 0);

    /* Nearly equal: a = (1, 1 + 2^-20), b = (1, 1). 1 - cos = 1 - (2 + 2^-20) /
     * (sqrt(1 + (1 + 2^-20)^2) sqrt 2) = 1.13686729301456942313e-13 (50-digit arithmetic);
     * a.b / (|a| |b|) in float64 would keep only about 3 of those digits. */
    double n1[2] = {1, 1 + 0x1p-20}, n2[2] = {1, 1};
    m = measure(GD_F64, n1, n2, 2, 0, 0);
    ck_assert_double_eq_tol(m.cosine_distance, 1.13686729301456942313e-13, 1e-22);
}
END_TEST

START_TEST(test_max_index)
{
    /* |a-b| = (0, 3, 0, 3): the first of the tied maxima is reported. */
    float a[4] = {0, 3, 0, -3}, b[4] = {0, 0, 0, 0};
    struct gd_metrics m = measure(GD_F32, a, b, 4, 1e-8, 1e-5);
    ck_assert_double_eq(m.abs_max, 3.0);
    ck_assert_int_eq(m.abs_max_index, 1);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(0x40400000)); /* 3.0 vs 0: its bit pattern */
    ck_assert_int_eq(m.ulp_max_index, 1);
    ck_assert_int_eq(m.rel_max_index, -1); /* b is all zero */
    ck_assert_int_eq(m.n_ref_zero, 4);
    ck_assert_int_eq(m.n_ref_zero_diff, 2);
}
END_TEST

START_TEST(test_histograms)
{
    /* b = 1.0, a = 1.0 + k ULP for k = 0, 1, 2, 3, 4, 1000. ULP bins: 0 -> 0, 1 -> 1, 2 and
     * 3 -> 2, 4 -> 3, 1000 -> 10 ([512, 1024)). rel = k * 2^-23: 2^-23 (bin of -23),
     * 2^-22 and 3 * 2^-23 (-22), 2^-21 (-21), 1000 * 2^-23 = 1.19e-4 in [2^-14, 2^-13). */
    int k[6] = {0, 1, 2, 3, 4, 1000};
    float a[6], b[6];
    for (int i = 0; i < 6; i++) {
        b[i] = 1.0f;
        a[i] = f32_of(0x3f800000u + (uint32_t)k[i]);
    }
    struct gd_metrics m = measure(GD_F32, a, b, 6, 1e-8, 1e-5);
    ck_assert_int_eq(m.ulp_hist[0], 1);
    ck_assert_int_eq(m.ulp_hist[1], 1);
    ck_assert_int_eq(m.ulp_hist[2], 2);
    ck_assert_int_eq(m.ulp_hist[3], 1);
    ck_assert_int_eq(m.ulp_hist[10], 1);
    ck_assert_int_eq(hist_total(m.ulp_hist, GD_METRICS_ULP_BINS), 6);
    ck_assert_int_eq(m.rel_hist[0], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(-23)], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(-22)], 2);
    ck_assert_int_eq(m.rel_hist[rel_bin(-21)], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(-14)], 1);
    ck_assert_int_eq(hist_total(m.rel_hist, GD_METRICS_REL_BINS), 6);
    ck_assert_double_eq(m.rel_max, 1000 * 0x1p-23);
    ck_assert_int_eq(m.rel_max_index, 5);
    ck_assert_uint_eq(m.ulp_max, 1000);

    /* rel = 1e30 / 1e-30 = 1e60 ~ 2^199: beyond float32 and above 2^63, the top bin. */
    float big = 1e30f, tiny = 1e-30f;
    m = measure(GD_F32, &big, &tiny, 1, 1e-8, 1e-5);
    ck_assert_int_eq(m.rel_hist[GD_METRICS_REL_BINS - 1], 1);
}
END_TEST

START_TEST(test_rel_quantile)
{
    /* 16 rel errors of exactly 2^-20 (b = 1, a = 1 + 2^-20): the median's target rank is 8
     * of 16 in bin [2^-20, 2^-19), so 2^-20 + (8/16) 2^-20 = 1.5 * 2^-20. */
    float a[16], b[16];
    for (int i = 0; i < 16; i++) {
        b[i] = 1.0f;
        a[i] = 1.0f + 0x1p-20f;
    }
    struct gd_metrics m = measure(GD_F32, a, b, 16, 0, 0);
    ck_assert_double_eq(gd_metrics_rel_quantile(&m, 0.5), 1.5 * 0x1p-20);
    ck_assert_double_eq(gd_metrics_rel_quantile(&m, 0.0), 0x1p-20);
    ck_assert_double_eq(gd_metrics_rel_quantile(&m, 1.0), 0x1p-19);

    /* 8 exact (rel 0) and 8 at 2^-10: q = 0.25 falls in the zero bin; q = 0.75 has target
     * 12, 4 into the 8 of bin [2^-10, 2^-9): 2^-10 + (4/8) 2^-10. */
    for (int i = 0; i < 8; i++)
        a[i] = 1.0f;
    for (int i = 8; i < 16; i++)
        a[i] = 1.0f + 0x1p-10f;
    m = measure(GD_F32, a, b, 16, 0, 0);
    ck_assert_double_eq(gd_metrics_rel_quantile(&m, 0.25), 0.0);
    ck_assert_double_eq(gd_metrics_rel_quantile(&m, 0.75), 1.5 * 0x1p-10);
    /* Within a factor of 2 of the exact 0.75 quantile, 2^-10. */
    double q = gd_metrics_rel_quantile(&m, 0.75);
    ck_assert(q >= 0x1p-10 && q < 0x1p-9);

    ck_assert(isnan(gd_metrics_rel_quantile(&m, 1.5)));
    ck_assert(isnan(gd_metrics_rel_quantile(&m, -0.1)));
    ck_assert(isnan(gd_metrics_rel_quantile(&m, NAN)));
    float z = 0.0f;
    m = measure(GD_F32, &z, &z, 1, 0, 0); /* b == 0: no relative errors */
    ck_assert(isnan(gd_metrics_rel_quantile(&m, 0.5)));
}
END_TEST

START_TEST(test_integers)
{
    /* int32: distances 0, 3, 6, 7 (bins 0, 2, 3, 3); 3 unequal; rel 0, 1.5, 2 and b == 0 at
     * 3; sum |a-b| = 16 (mean 4), sum (a-b)^2 = 94 (RMS sqrt(23.5) =
     * 4.84767985741632901407). */
    int32_t a[4] = {1, 5, -3, 7}, b[4] = {1, 2, 3, 0};
    struct gd_metrics m = measure(GD_I32, a, b, 4, 1e-8, 1e-5);
    ck_assert_int_eq(m.n_mismatch, 3);
    ck_assert_int_eq(m.mismatch_first_index, 1);
    ck_assert_uint_eq(m.ulp_max, 7);
    ck_assert_int_eq(m.ulp_max_index, 3);
    ck_assert_int_eq(m.ulp_hist[0], 1);
    ck_assert_int_eq(m.ulp_hist[2], 1);
    ck_assert_int_eq(m.ulp_hist[3], 2);
    ck_assert_double_eq(m.abs_max, 7.0);
    ck_assert_int_eq(m.abs_max_index, 3);
    ck_assert_double_eq(m.rel_max, 2.0);
    ck_assert_int_eq(m.rel_max_index, 2);
    ck_assert_int_eq(m.n_rel, 3);
    ck_assert_int_eq(m.rel_hist[0], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(0)], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(1)], 1);
    ck_assert_int_eq(m.n_ref_zero_diff, 1);
    ck_assert_int_eq(m.n_bits_differ, 3);
    ck_assert_int_eq(m.n_finite, 4);
    ck_assert_double_eq(m.abs_mean, 4.0);
    ck_assert_double_eq_tol(m.rms, 4.84767985741632901407, 1e-15);

    /* The widest int64 distance: INT64_MIN vs INT64_MAX = 2^64 - 1, bin 64. */
    int64_t la = INT64_MIN, lb = INT64_MAX;
    m = measure(GD_I64, &la, &lb, 1, 0, 0);
    ck_assert_uint_eq(m.ulp_max, UINT64_MAX);
    ck_assert_int_eq(m.ulp_hist[64], 1);

    /* uint8 0 vs 255 and 255 vs 0: distance 255 both, bin 8. */
    uint8_t ua[2] = {0, 255}, ub[2] = {255, 0};
    m = measure(GD_U8, ua, ub, 2, 0, 0);
    ck_assert_uint_eq(m.ulp_max, 255);
    ck_assert_int_eq(m.ulp_hist[8], 2);
    ck_assert_int_eq(m.n_mismatch, 2);

    /* bool: byte 2 and byte 1 are both true (bytes differ, values equal); 1 vs 0 is not. */
    uint8_t ba[3] = {2, 0, 1}, bb[3] = {1, 0, 0};
    m = measure(GD_BOOL, ba, bb, 3, 0, 0);
    ck_assert_int_eq(m.n_bits_differ, 2);
    ck_assert_int_eq(m.n_mismatch, 1);
    ck_assert_int_eq(m.mismatch_first_index, 2);
    ck_assert_uint_eq(m.ulp_max, 1);
}
END_TEST

START_TEST(test_errors)
{
    struct gd_err err = {0};
    struct gd_metrics m, out;
    memset(&out, 0x5a, sizeof out);
    struct gd_metrics untouched = out;
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    struct gd_tensor *a = gd_tensor_new(GD_F32, 2, s23, &err);
    struct gd_tensor *b64 = gd_tensor_new(GD_F64, 2, s23, &err);
    struct gd_tensor *b32 = gd_tensor_new(GD_F32, 2, s32, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b64);
    ck_assert_ptr_nonnull(b32);

    ck_assert_int_eq(gd_metrics_compute(a, b64, 1e-8, 1e-5, &out, &err), GD_EDTYPE);
    ck_assert_int_eq(err.code, GD_EDTYPE);
    ck_assert_msg(strstr(err.msg, "float32") && strstr(err.msg, "float64"), "%s", err.msg);
    ck_assert_int_eq(gd_metrics_compute(a, b32, 1e-8, 1e-5, &out, &err), GD_ESHAPE);
    ck_assert_msg(strstr(err.msg, "2x3") && strstr(err.msg, "3x2"), "%s", err.msg);
    ck_assert_int_eq(gd_metrics_compute(a, a, -1.0, 1e-5, &out, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_compute(a, a, NAN, 1e-5, &out, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_compute(a, a, 1e-8, INFINITY, &out, &err), GD_EINVAL);
    a->device = 1;
    ck_assert_int_eq(gd_metrics_compute(a, a, 1e-8, 1e-5, &out, &err), GD_EINVAL);
    a->device = 0;
    ck_assert_int_eq(memcmp(&out, &untouched, sizeof out), 0);
    ck_assert_int_eq(gd_metrics_compute(a, a, 1e-8, 1e-5, &out, NULL), 0);

    ck_assert_int_eq(gd_metrics_init(&m, GD_DTYPE_COUNT, 0, 0, &err), GD_EDTYPE);
    ck_assert_int_eq(gd_metrics_init(&m, GD_F32, 1e-8, 1e-5, &err), 0);
    struct gd_metrics before = m;
    float x = 1.0f;
    ck_assert_int_eq(gd_metrics_update(&m, &x, &x, -1, 0, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_update(&m, &x, &x, 1, -1, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_update(&m, &x, &x, 2, INT64_MAX - 1, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_update(&m, NULL, &x, 1, 0, &err), GD_EINVAL);
    ck_assert_int_eq(memcmp(&m, &before, sizeof m), 0);
    ck_assert_int_eq(gd_metrics_update(&m, NULL, NULL, 0, 0, &err), 0);

    struct gd_metrics other;
    ck_assert_int_eq(gd_metrics_init(&other, GD_F32, 1e-8, 1e-4, &err), 0);
    ck_assert_int_eq(gd_metrics_merge(&m, &other, &err), GD_EINVAL);
    ck_assert_int_eq(gd_metrics_init(&other, GD_F64, 1e-8, 1e-5, &err), 0);
    ck_assert_int_eq(gd_metrics_merge(&m, &other, &err), GD_EINVAL);
    ck_assert_int_eq(memcmp(&m, &before, sizeof m), 0);

    gd_tensor_free(a);
    gd_tensor_free(b64);
    gd_tensor_free(b32);
}
END_TEST

START_TEST(test_empty)
{
    float x = 0.0f;
    struct gd_metrics m = measure(GD_F32, &x, &x, 0, 1e-8, 1e-5);
    ck_assert_int_eq(m.count, 0);
    ck_assert_int_eq(m.bitwise_equal, 1);
    ck_assert_double_eq(m.cosine, 1.0);
    ck_assert(isinf(m.sqnr_db) && m.sqnr_db > 0);
    ck_assert_int_eq(m.abs_max_index, -1);
    ck_assert_int_eq(m.ulp_max_index, -1);
    ck_assert_int_eq(m.rel_max_index, -1);
    ck_assert_int_eq(m.mismatch_first_index, -1);
    ck_assert_double_eq(m.abs_mean, 0.0);
}
END_TEST

/*
 * Counts beyond 2^32, through the public merge: two partial results of 3e9 elements each
 * (as two threads or a tensor larger than memory would produce), then a measured chunk of 3
 * elements at index 6e9. Every total is exact int64 arithmetic done here by hand.
 */
START_TEST(test_counts_beyond_32_bits)
{
    struct gd_metrics part, total;
    ck_assert_int_eq(gd_metrics_init(&part, GD_F32, 1e-8, 1e-5, NULL), 0);
    part.count = INT64_C(3000000000);
    part.n_finite = INT64_C(3000000000);
    part.n_bits_differ = INT64_C(2500000000);
    part.n_mismatch = INT64_C(2200000000);
    part.mismatch_first_index = INT64_C(4500000000);
    part.n_rel = INT64_C(3000000000);
    part.ulp_hist[0] = INT64_C(500000000);
    part.ulp_hist[1] = INT64_C(2500000000);
    part.rel_hist[0] = INT64_C(500000000);
    part.rel_hist[rel_bin(-23)] = INT64_C(2500000000);
    part.ulp_max = 1;
    part.ulp_max_index = INT64_C(5000000000);
    part.abs_max = 0x1p-23;
    part.abs_max_index = INT64_C(5000000000);
    part.sum_abs.sum = 2500000000.0 * 0x1p-23;

    ck_assert_int_eq(gd_metrics_init(&total, GD_F32, 1e-8, 1e-5, NULL), 0);
    ck_assert_int_eq(gd_metrics_merge(&total, &part, NULL), 0);
    part.mismatch_first_index = INT64_C(4400000000);
    part.ulp_max_index = INT64_C(4300000000); /* the same maximum at a smaller index */
    ck_assert_int_eq(gd_metrics_merge(&total, &part, NULL), 0);

    /* The chunk: 1 vs 1 (equal), 3 vs 1 (not close), 1 vs 1 + 2^-23 (1 ULP, close). */
    float a[3] = {1.0f, 3.0f, 1.0f}, b[3] = {1.0f, 1.0f, 1.0f + 0x1p-23f};
    ck_assert_int_eq(gd_metrics_update(&total, a, b, 3, INT64_C(6000000000), NULL), 0);
    gd_metrics_finish(&total);

    ck_assert_int_eq(total.count, INT64_C(6000000003));
    ck_assert_int_eq(total.n_finite, INT64_C(6000000003));
    ck_assert_int_eq(total.n_bits_differ, INT64_C(5000000002));
    ck_assert_int_eq(total.n_mismatch, INT64_C(4400000001));
    ck_assert_int_eq(total.mismatch_first_index, INT64_C(4400000000));
    ck_assert_int_eq(total.ulp_hist[0], INT64_C(1000000001));
    ck_assert_int_eq(total.ulp_hist[1], INT64_C(5000000001));
    /* 3.0 (0x40400000) vs 1.0 (0x3f800000): 0xc00000 = 12582912 ULP, bin 24. */
    ck_assert_int_eq(total.ulp_hist[24], 1);
    ck_assert_uint_eq(total.ulp_max, UINT64_C(12582912));
    ck_assert_int_eq(total.ulp_max_index, INT64_C(6000000001));
    ck_assert_int_eq(total.n_rel, INT64_C(6000000003));
    ck_assert_int_eq(total.rel_hist[0], INT64_C(1000000001));
    /* 1 vs 1 + 2^-23: rel = 2^-23 / (1 + 2^-23), just under 2^-23: bin of -24. */
    ck_assert_int_eq(total.rel_hist[rel_bin(-23)], INT64_C(5000000000));
    ck_assert_int_eq(total.rel_hist[rel_bin(-24)], 1);
    ck_assert_int_eq(total.rel_hist[rel_bin(1)], 1); /* |3-1|/1 = 2 */
    ck_assert_double_eq(total.abs_max, 2.0);
    ck_assert_int_eq(total.abs_max_index, INT64_C(6000000001));
    /* mean = (5e9 * 2^-23 + 2 + 2^-23) / 6000000003, computed by hand in float64. */
    ck_assert_double_eq_tol(total.abs_mean, (5000000001.0 * 0x1p-23 + 2.0) / 6000000003.0,
                            1e-18);

    /* A count that would overflow int64 is refused and leaves the total alone. */
    struct gd_metrics huge = part, kept;
    huge.count = INT64_MAX;
    kept = total;
    ck_assert_int_eq(gd_metrics_merge(&total, &huge, NULL), GD_ERANGE);
    ck_assert_int_eq(memcmp(&total, &kept, sizeof total), 0);
}
END_TEST

/* ---- the vectorized path against the scalar one, and against simple loops here ---- */

static uint64_t
test_rand(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Data over several fast blocks and a tail: noise of a few ULP and a few thousand, exact
 * elements, zeros of both signs, subnormals, b == 0 with a != 0, huge values, and one
 * block with NaN and Inf (it takes the scalar path). */
static void
make_data(float *a, float *b, int64_t n)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = test_rand(&s);
        float v = (float)((int64_t)(r >> 11) - (INT64_C(1) << 52)) * 0x1p-52f;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        switch (r & 15) {
        case 0:
            bits += (uint32_t)(r >> 40) & 7;
            break;
        case 1:
            bits += (uint32_t)(r >> 40) & 4095;
            break;
        case 2:
            v = 0.0f;
            bits = (r >> 20) & 1 ? 0x80000000u : 0;
            break;
        case 3:
            v = f32_of((uint32_t)(r >> 30) & 0xff);
            bits = (uint32_t)(r >> 40) & 0x1ff;
            break;
        case 4:
            v = 0.0f;
            break;
        case 5:
            v *= 1e30f;
            memcpy(&bits, &v, sizeof bits);
            bits ^= (uint32_t)(r >> 50) & 3;
            break;
        default:
            break;
        }
        b[i] = v;
        a[i] = f32_of(bits);
    }
    /* The fourth block: NaNs and infinities. */
    a[3 * FAST_BLOCK + 17] = NAN;
    b[3 * FAST_BLOCK + 18] = INFINITY;
    a[3 * FAST_BLOCK + 19] = -INFINITY;
    b[3 * FAST_BLOCK + 19] = -INFINITY;
}

static void
assert_same_counts(const struct gd_metrics *x, const struct gd_metrics *y)
{
    ck_assert_int_eq(x->count, y->count);
    ck_assert_int_eq(x->n_finite, y->n_finite);
    ck_assert_int_eq(x->n_bits_differ, y->n_bits_differ);
    ck_assert_int_eq(x->n_mismatch, y->n_mismatch);
    ck_assert_int_eq(x->mismatch_first_index, y->mismatch_first_index);
    ck_assert_int_eq(x->a_nan, y->a_nan);
    ck_assert_int_eq(x->b_inf, y->b_inf);
    ck_assert_int_eq(x->nan_disagree, y->nan_disagree);
    ck_assert_int_eq(x->inf_both, y->inf_both);
    ck_assert_int_eq(x->inf_disagree, y->inf_disagree);
    ck_assert_int_eq(x->n_rel, y->n_rel);
    ck_assert_int_eq(x->n_ref_zero, y->n_ref_zero);
    ck_assert_int_eq(x->n_ref_zero_diff, y->n_ref_zero_diff);
    ck_assert_double_eq(x->abs_max, y->abs_max);
    ck_assert_int_eq(x->abs_max_index, y->abs_max_index);
    ck_assert_double_eq(x->rel_max, y->rel_max);
    ck_assert_int_eq(x->rel_max_index, y->rel_max_index);
    ck_assert_uint_eq(x->ulp_max, y->ulp_max);
    ck_assert_int_eq(x->ulp_max_index, y->ulp_max_index);
    for (int i = 0; i < GD_METRICS_ULP_BINS; i++)
        ck_assert_msg(x->ulp_hist[i] == y->ulp_hist[i], "ulp_hist[%d]: %lld vs %lld", i,
                      (long long)x->ulp_hist[i], (long long)y->ulp_hist[i]);
    for (int i = 0; i < GD_METRICS_REL_BINS; i++)
        ck_assert_msg(x->rel_hist[i] == y->rel_hist[i], "rel_hist[%d]: %lld vs %lld", i,
                      (long long)x->rel_hist[i], (long long)y->rel_hist[i]);
    ck_assert_double_eq_tol(x->abs_mean, y->abs_mean, 1e-13 * fabs(y->abs_mean));
    ck_assert_double_eq_tol(x->rms, y->rms, 1e-13 * y->rms);
    ck_assert_double_eq_tol(x->cosine_distance, y->cosine_distance,
                            1e-9 * y->cosine_distance);
    ck_assert_double_eq_tol(x->sqnr_db, y->sqnr_db, 1e-10);
}

static struct gd_metrics
measure_with(const char *simd, const float *a, const float *b, int64_t n)
{
    if (simd != NULL)
        setenv("GPUDIFF_METRICS_SIMD", simd, 1);
    else
        unsetenv("GPUDIFF_METRICS_SIMD");
    struct gd_metrics m = measure(GD_F32, a, b, n, 1e-8, 1e-5);
    unsetenv("GPUDIFF_METRICS_SIMD");
    return m;
}

START_TEST(test_paths_agree)
{
    const int64_t n = 5 * FAST_BLOCK + 123;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    make_data(a, b, n);

    struct gd_metrics fast = measure_with(NULL, a, b, n);
    struct gd_metrics portable = measure_with("portable", a, b, n);
    struct gd_metrics scalar = measure_with("off", a, b, n);
    assert_same_counts(&fast, &scalar);
    assert_same_counts(&portable, &scalar);
    /* Both vector kernels add the float64 lanes in the same order. */
    ck_assert_double_eq(fast.sum_abs.sum, portable.sum_abs.sum);
    ck_assert_double_eq(fast.sum_sq_err.sum, portable.sum_sq_err.sum);
    ck_assert_double_eq(fast.sum_sq_a.sum, portable.sum_sq_a.sum);
    ck_assert_double_eq(fast.sum_sq_b.sum, portable.sum_sq_b.sum);

    /* Independent loops: bytes differing, numpy's isclose in float32, the largest |a-b|,
     * the NaN and Inf bookkeeping of make_data. */
    int64_t bits_differ = 0, not_close = 0, first = -1, max_index = -1;
    double abs_max = 0;
    for (int64_t i = 0; i < n; i++) {
        bits_differ += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
        int close = fabsf(a[i] - b[i]) <= 1e-8f + 1e-5f * fabsf(b[i]);
        if (isinf(a[i]) || isinf(b[i]))
            close = a[i] == b[i];
        if (!close) {
            not_close++;
            first = first < 0 ? i : first;
        }
        if (isfinite(a[i]) && isfinite(b[i])) {
            double d = fabs((double)a[i] - (double)b[i]);
            if (max_index < 0 || d > abs_max) {
                abs_max = d;
                max_index = i;
            }
        }
    }
    ck_assert_int_eq(fast.n_bits_differ, bits_differ);
    ck_assert_int_eq(fast.n_mismatch, not_close);
    ck_assert_int_eq(fast.mismatch_first_index, first);
    ck_assert_double_eq(fast.abs_max, abs_max);
    ck_assert_int_eq(fast.abs_max_index, max_index);
    ck_assert_int_eq(fast.a_nan, 1);
    ck_assert_int_eq(fast.inf_both, 1);
    ck_assert_int_eq(fast.inf_disagree, 1);
    ck_assert_int_eq(fast.n_finite, n - 3);

    /* Chunks in reverse order, of sizes that split blocks, merged from two partials. */
    struct gd_metrics part1, part2;
    ck_assert_int_eq(gd_metrics_init(&part1, GD_F32, 1e-8, 1e-5, NULL), 0);
    ck_assert_int_eq(gd_metrics_init(&part2, GD_F32, 1e-8, 1e-5, NULL), 0);
    int64_t cut[] = {0, 1000, 1000 + 2 * FAST_BLOCK, 3 * FAST_BLOCK + 5, n};
    for (int k = 3; k >= 0; k--) {
        struct gd_metrics *p = k % 2 ? &part1 : &part2;
        ck_assert_int_eq(gd_metrics_update(p, a + cut[k], b + cut[k], cut[k + 1] - cut[k],
                                           cut[k], NULL),
                         0);
    }
    ck_assert_int_eq(gd_metrics_merge(&part1, &part2, NULL), 0);
    gd_metrics_finish(&part1);
    assert_same_counts(&part1, &scalar);

    /* Data at an odd address, through the fast path. */
    char *raw_a = malloc((size_t)n * 4 + 1), *raw_b = malloc((size_t)n * 4 + 1);
    ck_assert_ptr_nonnull(raw_a);
    ck_assert_ptr_nonnull(raw_b);
    memcpy(raw_a + 1, a, (size_t)n * 4);
    memcpy(raw_b + 1, b, (size_t)n * 4);
    struct gd_metrics odd;
    ck_assert_int_eq(gd_metrics_init(&odd, GD_F32, 1e-8, 1e-5, NULL), 0);
    ck_assert_int_eq(gd_metrics_update(&odd, raw_a + 1, raw_b + 1, n, 0, NULL), 0);
    gd_metrics_finish(&odd);
    assert_same_counts(&odd, &scalar);

    free(raw_a);
    free(raw_b);
    free(a);
    free(b);
}
END_TEST

/* A block of exact copies but for known elements, so the fast path's counts are checked
 * against hand-computed ones. */
START_TEST(test_fast_block_by_hand)
{
    float *a = calloc(FAST_BLOCK, sizeof *a), *b = calloc(FAST_BLOCK, sizeof *b);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    for (int i = 0; i < FAST_BLOCK; i++)
        a[i] = b[i] = 1.0f + (float)i; /* exact in float32 */
    /* 10: +1 ULP of 11.0 (2^-20); 2000: +100 ULP of 2001.0 (100 * 2^-13); 3000: b = 0,
     * a = 0.5; 4095: a = -b. */
    a[10] = f32_of(0x41300000u + 1u);
    a[2000] = f32_of(0x44fa2000u + 100u);
    b[3000] = 0.0f;
    a[3000] = 0.5f;
    a[4095] = -4096.0f;
    struct gd_metrics m = measure(GD_F32, a, b, FAST_BLOCK, 1e-8, 1e-5);
    ck_assert_int_eq(m.n_bits_differ, 4);
    ck_assert_int_eq(m.ulp_hist[0], FAST_BLOCK - 4);
    ck_assert_int_eq(m.ulp_hist[1], 1);
    ck_assert_int_eq(m.ulp_hist[7], 1); /* 100 in [64, 128) */
    /* 0.5 vs 0: 0x3f000000 ULP, in [2^29, 2^30); -4096 vs 4096: 2 * 0x45800000 =
     * 0x8b000000 >= 2^31. */
    ck_assert_int_eq(m.ulp_hist[30], 1);
    ck_assert_int_eq(m.ulp_hist[32], 1);
    ck_assert_uint_eq(m.ulp_max, UINT64_C(0x8b000000));
    ck_assert_int_eq(m.ulp_max_index, 4095);
    /* rel: 2^-20 / 11 in [2^-24, 2^-23); 100 * 2^-13 / 2001 = 6.1e-6 in [2^-18, 2^-17);
     * 8192 / 4096 = 2; the rest are 0; 3000 has b == 0. */
    ck_assert_int_eq(m.rel_hist[0], FAST_BLOCK - 4);
    ck_assert_int_eq(m.rel_hist[rel_bin(-24)], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(-18)], 1);
    ck_assert_int_eq(m.rel_hist[rel_bin(1)], 1);
    ck_assert_int_eq(m.n_ref_zero, 1);
    ck_assert_int_eq(m.n_ref_zero_diff, 1);
    ck_assert_double_eq(m.rel_max, 2.0);
    ck_assert_int_eq(m.rel_max_index, 4095);
    ck_assert_double_eq(m.abs_max, 8192.0);
    ck_assert_int_eq(m.abs_max_index, 4095);
    /* 10 and 2000 are close (100 * 2^-13 = 0.01220703125 <= 1e-8 + 1e-5 * 2001 =
     * 0.02001001); 3000 (0.5 > 1e-8) and 4095 are not. */
    ck_assert_int_eq(m.n_mismatch, 2);
    ck_assert_int_eq(m.mismatch_first_index, 3000);
    free(a);
    free(b);
}
END_TEST

/*
 * Two fast blocks at the edges of the codes. Block 0, atol 0.25 and rtol 0, b = 1 + k/256
 * (k = i % 256): i % 4 == 0 has |a-b| = 0.25 exactly, close since numpy compares with <=;
 * i % 4 == 1 has |a-b| one float32 step (2^-22) more, not close; the rest are equal. Block
 * 1: even i has rel = 2^26 / 2^-100 = 2^126 (the top bin, codes next to the special ones),
 * i % 4 == 1 is equal, i % 4 == 3 has b == 0 and a == 1.
 */
START_TEST(test_fast_block_edges)
{
    const int n = 2 * FAST_BLOCK;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    for (int i = 0; i < FAST_BLOCK; i++) {
        b[i] = 1.0f + (float)(i % 256) * 0x1p-8f;
        a[i] = b[i];
        if (i % 4 == 0)
            a[i] = b[i] + 0.25f; /* exact: b + 0.25 < 2.25 is a multiple of 2^-22 */
        if (i % 4 == 1)
            a[i] = nextafterf(b[i] + 0.25f, 4.0f);
    }
    for (int i = FAST_BLOCK; i < n; i++) {
        a[i] = i % 2 ? 1.0f : 0x1p26f;
        b[i] = i % 2 ? 1.0f : 0x1p-100f;
        if (i % 4 == 3)
            b[i] = 0.0f;
    }
    struct gd_metrics m = measure(GD_F32, a, b, n, 0.25, 0.0);
    /* Not close: block 0's 1024 at i % 4 == 1; block 1's 2048 huge ones and 1024 with
     * |1 - 0| = 1 > 0.25. */
    ck_assert_int_eq(m.n_mismatch, 1024 + 2048 + 1024);
    ck_assert_int_eq(m.mismatch_first_index, 1);
    /* Block 0 rel: 0.25 / 1 = 2^-2 for the 16 i with k == 0 (i % 256 == 0); every other
     * nonzero one is below 0.25 and above 0.125. */
    ck_assert_int_eq(m.rel_hist[rel_bin(-2)], 16);
    ck_assert_int_eq(m.rel_hist[rel_bin(-3)], 2048 - 16);
    ck_assert_int_eq(m.rel_hist[GD_METRICS_REL_BINS - 1], 2048);
    ck_assert_int_eq(m.rel_hist[0], 2048 + 1024);
    ck_assert_int_eq(m.n_ref_zero, 1024);
    ck_assert_int_eq(m.n_ref_zero_diff, 1024);
    ck_assert_int_eq(m.n_rel, n - 1024);
    ck_assert_int_eq(hist_total(m.rel_hist, GD_METRICS_REL_BINS), n - 1024);
    ck_assert_double_eq(m.rel_max, 0x1p126);
    ck_assert_int_eq(m.rel_max_index, FAST_BLOCK);
    free(a);
    free(b);
}
END_TEST

static Suite *
metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ulp_f32);
    tcase_add_test(tc, test_nonfinite);
    tcase_add_test(tc, test_16bit_floats);
    tcase_add_test(tc, test_16bit_isclose_random);
    tcase_add_test(tc, test_float64);
    tcase_add_test(tc, test_isclose_numpy);
    tcase_add_test(tc, test_cosine_sqnr);
    tcase_add_test(tc, test_max_index);
    tcase_add_test(tc, test_histograms);
    tcase_add_test(tc, test_rel_quantile);
    tcase_add_test(tc, test_integers);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_counts_beyond_32_bits);
    tcase_add_test(tc, test_paths_agree);
    tcase_add_test(tc, test_fast_block_by_hand);
    tcase_add_test(tc, test_fast_block_edges);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
