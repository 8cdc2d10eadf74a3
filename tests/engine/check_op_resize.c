/*
 * check_op_resize.c: Resize and Upsample (engine/cpu/op_resize.c, engine/core/resize_rules.c)
 * on cpu and cpu64 against the exact ONNX definitions of cases_spatial.py.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "op_fixture.h"
#include "op_harness.h"
#include "tolerance.h"

/* clang-format off */
static const char *const resize_cases[] = {
    "rep", "linear_1d", "linear_3d_sizes", "linear_downsample", "linear_align_corners",
    "linear_align_corners_up", "linear_pytorch_half_pixel", "linear_asymmetric",
    "linear_half_pixel_symmetric", "linear_tf_crop_and_resize", "linear_axes", "nearest",
    "nearest_ties_prefer_floor", "nearest_ties_prefer_ceil", "nearest_floor_align_corners",
    "nearest_ceil_half_pixel", "nearest_tf_half_pixel_for_nn", "nearest_downsample",
    "nearest_3d", "nearest_tf_crop_and_resize", "nearest_not_larger", "nearest_not_smaller",
    "identity", "cubic", "cubic_exclude_outside", "cubic_align_corners", "cubic_downsample",
    "cubic_asymmetric_1d", NULL};

static const char *const upsample_cases[] = {"rep", "nearest", "nearest_attr",
                                             "linear_fraction", NULL};
/* clang-format on */

/*
 * Linear and cubic: the source coordinates are exact rationals and each weight is evaluated
 * in long double and rounded once, so it is within u (|w| + 1/32) of the exact weight
 * (docs/NUMERICS.md, "Resize"). A term is the product of the d resized axes' weights and x:
 * d weights, d - 1 products and the term's own rounding; the r = taps^d terms are summed from
 * +0 (r - 1 additions). So |computed - exact| <= gamma_n(u) mag, n = r + 2d the case's
 * reduction_len and mag = sum |x| prod (|w| + 1/32): of_bound_sum(). Nearest (and
 * extrapolation) copies a value: bitwise.
 */
static void
check(const char *op, const char *name)
{
    struct of_case c;
    ck_assert_msg(of_case_load(op, name, &c) == 0, "cannot load %s/%s", op, name);
    int copies = !of_attr_is(&c, "mode", "linear") && !of_attr_is(&c, "mode", "cubic");
    of_case_fini(&c);
    of_check_case(op, name, copies ? NULL : of_bound_sum, NULL);
}

START_TEST(test_resize)
{
    check("Resize", resize_cases[_i]);
}
END_TEST

START_TEST(test_upsample)
{
    check("Upsample", upsample_cases[_i]);
}
END_TEST

/* The trait the comparison uses: nearest is one term, linear and cubic count every product. */
START_TEST(test_reduction_len)
{
    struct of_case c;
    ck_assert_int_eq(of_case_load("Resize", resize_cases[_i], &c), 0);
    struct gd_err err = {0};
    int64_t len = -1;
    int rc = oh_reduction_len(c.op, c.n_in, c.in, c.const_mask, c.attrs_json, c.n_out, &len, &err);
    ck_assert_msg(rc == 0, "%s: %s", resize_cases[_i], err.msg);
    ck_assert_msg(len == c.reduction_len, "%s: gd_node_reduction_len() is %lld, the case %lld",
                  resize_cases[_i], (long long)len, (long long)c.reduction_len);
    of_case_fini(&c);
}
END_TEST

START_TEST(test_listing)
{
    of_check_listing("Resize", resize_cases);
    of_check_listing("Upsample", upsample_cases);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("op_resize");
    TCase *tc = tcase_create("resize");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_resize, 0, of_count(resize_cases));
    tcase_add_loop_test(tc, test_upsample, 0, of_count(upsample_cases));
    tcase_add_loop_test(tc, test_reduction_len, 0, of_count(resize_cases));
    tcase_add_test(tc, test_listing);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
