/*
 * check_op_resize.c: Resize and Upsample (engine/cpu/op_resize.c, engine/core/resize_rules.c)
 * on cpu and cpu64 against the exact ONNX definitions of cases_spatial.py.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../../engine/core/resize_rules.h"
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

/* A tf_crop_and_resize plan of one axis: input in, output out, scale num / den, roi a to b. */
static int
crop_plan(int64_t in, int64_t out, int64_t num, int64_t den, double a, double b,
          struct gd__resize_plan *plan, struct gd_err *err)
{
    struct gd_params p = {0};
    p.resize_mode = GD_RESIZE_NEAREST;
    p.coord_mode = GD_COORD_TF_CROP_AND_RESIZE;
    p.nearest_mode = GD_NEAREST_ROUND_PREFER_FLOOR;
    p.scale_num[0] = num;
    p.scale_den[0] = den;
    p.roi[0] = a;
    p.roi[GD_MAX_DIMS] = b;
    p.resized_axes = 1;
    return gd__resize_plan_make(&p, 1, &in, &out, plan, err);
}

/*
 * The 128-bit coordinate arithmetic at its limits (resize_rules.c), where no tensor is
 * needed. The roi 2^-62 makes the common denominator Q = 2^62. (1) An input of 2^33 sized
 * to 3 (scale 3 / 2^33): (in - 1) D = (2^33 - 1) 2^62 2^34 is past 2^127, once computed
 * unchecked. The coordinates (ONNX: a (in - 1) + o (b - a)(in - 1) / (out - 1), below 2^-27
 * with b = 2^-61) all round to index 0. (2) An input of 2 sized to 16384 with roi up to
 * 2^52: o (b - a) Q = o (2^114 - 1) passes 2^127 at o = 8192, once unchecked; it is refused.
 */
START_TEST(test_plan_limits)
{
    struct gd__resize_plan plan;
    struct gd_err err = {0};
    int rc = crop_plan(INT64_C(1) << 33, 3, 3, INT64_C(1) << 33, 0x1p-62, 0x1p-61, &plan, &err);
    ck_assert_msg(rc == 0, "in 2^33: %s", err.msg);
    ck_assert_int_eq(plan.n_axes, 1);
    for (int o = 0; o < 3; o++)
        ck_assert_int_eq(plan.axis[0].index[o], 0);
    gd__resize_plan_free(&plan);
    gd_err_clear(&err);
    rc = crop_plan(2, 16384, 8192, 1, 0x1p-62, 0x1p52, &plan, &err);
    ck_assert_msg(rc == GD_ENOTSUP, "roi to 2^52: got %s (%s)", gd_err_name(rc), err.msg);
}
END_TEST

/* An axis of 2^40 at scale 1: half_pixel maps o to ((2o + 1) - 1) / 2 = o, the identity;
 * tf_crop_and_resize with roi 0 to 1/2 maps o to o (in - 1) / (2 (in - 1)) = o / 2, not.
 * Answered at once (every o was tried, for hours). */
START_TEST(test_identity_long_axis)
{
    int64_t len = INT64_C(1) << 40;
    struct gd_params p = {0};
    p.coord_mode = GD_COORD_HALF_PIXEL;
    p.scale_num[0] = p.scale_den[0] = 1;
    ck_assert_int_eq(gd__resize_axis_identity(&p, 0, len, len), 1);
    p.coord_mode = GD_COORD_TF_CROP_AND_RESIZE;
    p.roi[0] = 0;
    p.roi[GD_MAX_DIMS] = 0.5;
    ck_assert_int_eq(gd__resize_axis_identity(&p, 0, len, len), 0);
    p.roi[GD_MAX_DIMS] = 1;
    ck_assert_int_eq(gd__resize_axis_identity(&p, 0, len, len), 1);
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
    tcase_add_test(tc, test_plan_limits);
    tcase_add_test(tc, test_identity_long_axis);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
