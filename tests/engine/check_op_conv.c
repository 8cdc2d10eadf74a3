/* check_op_conv.c: Conv and ConvTranspose (engine/cpu/op_conv.c) on cpu and cpu64. */
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

/* clang-format off */
static const char *const conv_cases[] = {
    "rep", "stride2", "asym_pads", "dilation", "dilation_stride", "groups", "depthwise",
    "multiplier", "conv1d", "conv1d_dilation", "conv1d_same_upper", "same_upper", "same_lower",
    "same_upper_dilation", "valid", "no_bias", "pointwise", "kernel_shape", "deep",
    "large_magnitude", "conv3d", "conv3d_stride_pads", "conv3d_groups_dilation",
    "conv3d_same_lower", NULL};

static const char *const convt_cases[] = {
    "rep", "stride", "pads", "output_padding", "dilation", "dilation_odd", "groups",
    "depthwise", "output_shape", "output_shape_same_upper", "same_upper", "same_lower",
    "conv1d", "conv1d_dilation", "no_bias", "conv3d", "conv3d_pads_output_padding",
    "conv3d_groups_dilation", "output_shape_larger", "output_shape_larger_same_upper", NULL};
/* clang-format on */

/*
 * Both ops: each output element is a sum of n terms, the products w*x of its taps and the
 * bias (n = the case's reduction_len, the most terms any element of the case has). Summed
 * in float from +0 in any order, each product passes through at most n roundings (its own
 * and the additions after it; adding the first term to +0 is exact), so
 *   |computed - exact| <= gamma_n(u) sum |terms|        (Higham, lemma 3.1 and eq. 3.5)
 * and the fixture's float64 reference adds 2^-53 |y| <= 2^-53 sum |terms|: of_bound_sum()
 * with no rounding after the sum. u = 2^-24 on cpu, 2^-53 on cpu64.
 */
START_TEST(test_conv)
{
    of_check_case("Conv", conv_cases[_i], of_bound_sum, NULL);
}
END_TEST

START_TEST(test_conv_transpose)
{
    of_check_case("ConvTranspose", convt_cases[_i], of_bound_sum, NULL);
}
END_TEST

/*
 * The trait the comparison's noise bound uses, gd_node_reduction_len(), must count at least
 * the products that really reach one output (the fixture's reduction_len less the bias):
 * a smaller count would call honest rounding noise a divergence.
 */
static void
check_reduction_len(const char *op, const char *name)
{
    struct of_case c;
    struct gd_err err = {0};
    int64_t len = -1;
    ck_assert_msg(of_case_load(op, name, &c) == 0, "cannot load %s/%s", op, name);
    int has_bias = c.n_in > 2 && c.in[2] != NULL;
    int64_t products = c.reduction_len - has_bias;
    int rc = oh_reduction_len(c.op, c.n_in, c.in, c.const_mask, c.attrs_json, c.n_out, &len, &err);
    of_case_fini(&c);
    ck_assert_msg(rc == 0, "%s/%s: %s", op, name, err.msg);
    ck_assert_msg(len >= products,
                  "%s/%s: gd_node_reduction_len() is %lld, but an output sums %lld products", op,
                  name, (long long)len, (long long)products);
}

START_TEST(test_conv_reduction_len)
{
    check_reduction_len("Conv", conv_cases[_i]);
}
END_TEST

START_TEST(test_conv_transpose_reduction_len)
{
    check_reduction_len("ConvTranspose", convt_cases[_i]);
}
END_TEST

/* GD_RED_CONV by hand: a 1-D Conv with weight (4, 3, 5), group 1, sums 3 x 5 = 15 products. */
START_TEST(test_conv1d_reduction_len_by_hand)
{
    int64_t xs[3] = {1, 3, 9}, ws[3] = {4, 3, 5};
    struct gd_tensor *in[2] = {oh_random(3, xs, 1), oh_random(3, ws, 2)};
    struct gd_err err = {0};
    int64_t len = -1;
    int rc = oh_reduction_len("Conv", 2, in, 2u, NULL, 1, &len, &err);
    gd_tensor_free(in[0]);
    gd_tensor_free(in[1]);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_msg(len == 15, "reduction_len of a 1-D conv: %lld, want 3 x 5 = 15", (long long)len);
}
END_TEST

START_TEST(test_listing)
{
    of_check_listing("Conv", conv_cases);
    of_check_listing("ConvTranspose", convt_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_conv");
    TCase *tc = tcase_create("Conv");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_conv, 0, of_count(conv_cases));
    tcase_add_loop_test(tc, test_conv_reduction_len, 0, of_count(conv_cases));
    tcase_add_test(tc, test_conv1d_reduction_len_by_hand);
    suite_add_tcase(s, tc);
    tc = tcase_create("ConvTranspose");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_conv_transpose, 0, of_count(convt_cases));
    tcase_add_loop_test(tc, test_conv_transpose_reduction_len, 0, of_count(convt_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("fixtures");
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
