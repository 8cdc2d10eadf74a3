/* check_op_pool.c: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (engine/cpu/op_pool.c). */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "op_harness.h"

/* clang-format off */
static const char *const maxpool_cases[] = {
    "rep", "asym_pads", "ceil", "ceil_drop", "pool1d", "same_upper", "same_lower", "valid",
    "pads", "negative_pads", "dilation", "dilation_ceil", "nan", "pool3d", "pool3d_pads_ceil",
    "pool3d_same_upper", "pool3d_dilation", "indices", "indices_column_major",
    "indices_1d_dilation", "indices_3d", "indices_3d_column_major", "indices_ties", NULL};

static const char *const avgpool_cases[] = {
    "rep", "asym_pads", "ceil", "ceil_drop", "pool1d", "same_upper", "same_lower", "valid",
    "pads_excl", "asym_pads_excl", "ceil_excl", "ceil_drop_excl", "pads_incl",
    "asym_pads_incl", "ceil_incl", "ceil_drop_incl", "whole", "pool3d", "pool3d_pads_ceil",
    "pool3d_same_upper", "pool3d_pads_incl", NULL};

static const char *const gap_cases[] = {"rep", "pool1d", "one_pixel", "large", "pool3d", NULL};

static const char *const gmp_cases[] = {"rep", "pool1d", "pool3d", "large", "special", NULL};
/* clang-format on */

/*
 * MaxPool selects one input element (NaN propagating): bitwise equal to numpy's float32,
 * and its Indices (int64) equal to the reference's positions. GlobalMaxPool likewise.
 */
START_TEST(test_max_pool)
{
    of_check_case("MaxPool", maxpool_cases[_i], NULL, NULL);
}
END_TEST

START_TEST(test_global_max_pool)
{
    of_check_case("GlobalMaxPool", gmp_cases[_i], NULL, NULL);
}
END_TEST

/*
 * AveragePool and GlobalAveragePool: a sum of m <= n window elements (n = kernel area, or
 * H x W) from +0, then one division by the count: m - 1 inexact additions and the division,
 * at most n roundings per term, so |computed - exact| <= gamma_n(u) sum|x| / count, plus
 * 2^-53 of that for the reference: of_bound_sum() with mag = sum|x| / count.
 */
START_TEST(test_average_pool)
{
    of_check_case("AveragePool", avgpool_cases[_i], of_bound_sum, NULL);
}
END_TEST

START_TEST(test_global_average_pool)
{
    of_check_case("GlobalAveragePool", gap_cases[_i], of_bound_sum, NULL);
}
END_TEST

/*
 * MaxPool's rule is m = v if v > m (or v is NaN), from -inf, taps row by row: of equal
 * zeros the first one stays. Planes without NaN take a vectorized loop (op_pool.c), which
 * must keep that: windows of mixed zeros, all -inf, and the same with the NaN loop (a NaN
 * in the second plane), on both backends and with several threads.
 */
START_TEST(test_max_pool_zero_ties)
{
    /* two planes of 2 x 6, windows 2 x 2 at stride 2: three windows each */
    static const float x[24] = {-0.0f, 0.0f,  0.0f, -0.0f, -INFINITY, -INFINITY,
                                -0.0f, -0.0f, 0.0f, 0.0f,  -INFINITY, -INFINITY,
                                -0.0f, 0.0f,  0.0f, -0.0f, NAN,       1.0f,
                                -0.0f, -0.0f, 0.0f, 0.0f,  2.0f,      NAN};
    static const int want_neg[6] = {1, 0, 1, 1, 0, 0}; /* sign bits; the last two NaN */
    static const float want[6] = {-0.0f, 0.0f, -INFINITY, -0.0f, 0.0f, NAN};
    int64_t shape[4] = {1, 2, 2, 6};
    struct gd_tensor *in = oh_f32(4, shape, x);
    const char *backends[2] = {"cpu", "cpu64"};
    for (int b = 0; b < 2; b++) {
        struct gd_knobs knobs;
        gd_knobs_init(&knobs);
        knobs.threads = 2;
        struct gd_tensor *out = NULL;
        struct gd_err err = {0};
        int rc = oh_run(backends[b], "MaxPool", 1, &in, 0u,
                        "{\"kernel_shape\": [2, 2], \"strides\": [2, 2]}", 1, &out, &knobs,
                        &err);
        ck_assert_msg(rc == 0, "%s: %s", backends[b], err.msg);
        for (int i = 0; i < 6; i++) {
            double got = gd_tensor_get_f64(out, i);
            if (isnan(want[i]))
                ck_assert_msg(isnan(got), "%s: window %d: got %g, want NaN", backends[b], i,
                              got);
            else
                ck_assert_msg(got == want[i] && (signbit(got) != 0) == want_neg[i],
                              "%s: window %d: got %g (sign %d), want %g (sign %d)", backends[b],
                              i, got, signbit(got) != 0, (double)want[i], want_neg[i]);
        }
        gd_tensor_free(out);
    }
    gd_tensor_free(in);
}
END_TEST

START_TEST(test_listing)
{
    of_check_listing("MaxPool", maxpool_cases);
    of_check_listing("AveragePool", avgpool_cases);
    of_check_listing("GlobalAveragePool", gap_cases);
    of_check_listing("GlobalMaxPool", gmp_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_pool");
    TCase *tc = tcase_create("pools");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_max_pool, 0, of_count(maxpool_cases));
    tcase_add_loop_test(tc, test_average_pool, 0, of_count(avgpool_cases));
    tcase_add_loop_test(tc, test_global_average_pool, 0, of_count(gap_cases));
    tcase_add_loop_test(tc, test_global_max_pool, 0, of_count(gmp_cases));
    tcase_add_test(tc, test_max_pool_zero_ties);
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
