/* check_op_pool.c: MaxPool, AveragePool, GlobalAveragePool (engine/cpu/op_pool.c). */
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"

/* clang-format off */
static const char *const maxpool_cases[] = {
    "rep", "asym_pads", "ceil", "ceil_drop", "pool1d", "same_upper", "same_lower", "valid",
    "pads", "negative_pads", "dilation", "dilation_ceil", "nan", NULL};

static const char *const avgpool_cases[] = {
    "rep", "asym_pads", "ceil", "ceil_drop", "pool1d", "same_upper", "same_lower", "valid",
    "pads_excl", "asym_pads_excl", "ceil_excl", "ceil_drop_excl", "pads_incl",
    "asym_pads_incl", "ceil_incl", "ceil_drop_incl", "whole", NULL};

static const char *const gap_cases[] = {"rep", "pool1d", "one_pixel", "large", NULL};
/* clang-format on */

/* MaxPool selects one input element (NaN propagating): bitwise equal to numpy's float32. */
START_TEST(test_max_pool)
{
    of_check_case("MaxPool", maxpool_cases[_i], NULL, NULL);
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

START_TEST(test_listing)
{
    of_check_listing("MaxPool", maxpool_cases);
    of_check_listing("AveragePool", avgpool_cases);
    of_check_listing("GlobalAveragePool", gap_cases);
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
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
