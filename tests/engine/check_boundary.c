/*
 * check_boundary.c: tests of engine/compare/boundary.c with hand-made runs: a Floor's flips
 * and the inputs near its steps, counted the same whichever run is a; and ops that ops.def
 * marks ill-conditioned (Div, Log) amplifying a small input difference near their pole,
 * reported as amplified with the inputs near the pole, the smallest |x| and the growth,
 * while a large error far from any pole stays divergent.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

static double
num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *
obj(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_object(v), "no object %s", key);
    return v;
}

/*
 * Four fc2 values straddle an integer (3e-7 below it on b, 5e-7 above on a); Floor flips
 * there. Those inputs lie within the difference (8e-7) of a step on either side, so the
 * count is the same whichever run is a.
 */
static void
floor_case(struct fx_run *a, struct fx_run *b)
{
    const int64_t n = 200;
    double *ya = malloc(n * sizeof *ya), *yb = malloc(n * sizeof *yb);
    double *fa = malloc(n * sizeof *fa), *fb = malloc(n * sizeof *fb);
    fx_random(yb, n, 71);
    for (int64_t i = 0; i < n; i++) {
        yb[i] = 4 * yb[i];
        ya[i] = yb[i];
    }
    for (int k = 0; k < 4; k++) {
        yb[10 + k] = (k + 1) - 3e-7;
        ya[10 + k] = (k + 1) + 5e-7;
    }
    for (int64_t i = 0; i < n; i++) {
        fa[i] = floor((float)ya[i]);
        fb[i] = floor((float)yb[i]);
    }
    fx_pair(a, b, "fc2", "Gemm", 120, "", n, 0, ya, yb);
    fx_pair(a, b, "relu4", "Floor", 1, "fc2", n, 0, fa, fb);
    free(ya), free(yb), free(fa), free(fb);
}

START_TEST(test_floor_near_steps_both_ways)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    floor_case(a, b);
    json_t *ab = fx_diff_json(a, b, NULL), *ba = fx_diff_json(b, a, NULL);
    json_t *fab = fx_layer_json(ab, "relu4"), *fba = fx_layer_json(ba, "relu4");
    ck_assert_int_eq(json_integer_value(json_object_get(fab, "flipped")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(fab, "near_boundary")),
                     json_integer_value(json_object_get(fba, "near_boundary")));
    ck_assert_int_ge(json_integer_value(json_object_get(fab, "near_boundary")), 4);
    ck_assert_str_eq(fx_str(fab, "verdict"), "amplified");
    ck_assert_str_eq(fx_str(fba, "verdict"), "amplified");
    json_decref(ab);
    json_decref(ba);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * x: values of size 1 differing by 1e-7 (noise for a 16-term Gemm), one of them 1e-6 (1.1e-6
 * on a) and one 5e-8, within the difference of 0. d = num / x: the 1e-7 difference becomes
 * 9e4 at x = 1e-6, 4.5e-3 of d's scale (2e7): growth 4.5e4, explained by the conditioning
 * (difference / smallest |x| = 2), so d is amplified with that reason.
 */
START_TEST(test_div_near_pole_is_amplified)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 100;
    double one[100], xa[100], xb[100], da[100], db[100];
    fx_random(xb, n, 81);
    for (int64_t i = 0; i < n; i++) {
        one[i] = 1.0;
        xb[i] = 0.5 + 0.5 * fabs(xb[i]);
    }
    xb[3] = 5e-8;
    xb[7] = 1e-6;
    memcpy(xa, xb, sizeof xa);
    fx_perturb(xa, n, 1e-7, 82);
    xa[3] = xb[3];
    xa[7] = 1.1e-6;
    for (int64_t i = 0; i < n; i++) {
        da[i] = 1.0 / (float)xa[i];
        db[i] = 1.0 / (float)xb[i];
    }
    fx_pair(a, b, "num", "Relu", 1, "", n, 0, one, one);
    fx_pair(a, b, "x", "Gemm", 16, "", n, 0, xa, xb);
    fx_pair(a, b, "d", "Div", 1, "num,x", n, 0, da, db);
    json_t *j = fx_diff_json(a, b, NULL);
    json_t *d = fx_layer_json(j, "d");
    ck_assert_str_eq(fx_str(fx_layer_json(j, "x"), "verdict"), "noise");
    ck_assert_msg(strcmp(fx_str(d, "verdict"), "amplified") == 0, "d is %s (err %g, growth %g)",
                  fx_str(d, "verdict"), num(d, "err"), num(d, "growth"));
    json_t *c = obj(d, "conditioning");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "near_pole")), 1);
    ck_assert_msg(fabs(num(c, "x_min") - (double)(float)5e-8) < 1e-15, "x_min %g",
                  num(c, "x_min"));
    ck_assert_msg(num(d, "growth") > 1e3, "growth %g", num(d, "growth"));
    ck_assert_msg(strstr(fx_str(d, "reason"), "pole") != NULL, "reason: %s", fx_str(d, "reason"));
    json_t *amps = json_object_get(j, "amplifiers");
    ck_assert_int_eq(json_array_size(amps), 1);
    ck_assert_str_eq(json_string_value(json_array_get(amps, 0)), "d");
    ck_assert_msg(strstr(fx_str(j, "explanation"), "pole") != NULL, "%s",
                  fx_str(j, "explanation"));
    json_decref(j);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* Log of an input that comes within 1e-6 of 0: 2e-7 there moves the output by 0.18. */
START_TEST(test_log_near_pole_is_amplified)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 64;
    double xa[64], xb[64], la[64], lb[64];
    fx_random(xb, n, 91);
    for (int64_t i = 0; i < n; i++)
        xb[i] = 1.25 + 0.75 * xb[i];
    xb[4] = 1e-6;
    memcpy(xa, xb, sizeof xa);
    xa[4] = 1.2e-6;
    for (int64_t i = 0; i < n; i++) {
        la[i] = log((float)xa[i]);
        lb[i] = log((float)xb[i]);
    }
    fx_pair(a, b, "x", "Gemm", 64, "", n, 0, xa, xb);
    fx_pair(a, b, "l", "Log", 1, "x", n, 0, la, lb);
    json_t *j = fx_diff_json(a, b, NULL);
    json_t *l = fx_layer_json(j, "l");
    ck_assert_msg(strcmp(fx_str(l, "verdict"), "amplified") == 0, "l is %s",
                  fx_str(l, "verdict"));
    ck_assert_msg(num(obj(l, "conditioning"), "x_min") < 2e-6, "x_min");
    json_decref(j);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* A Div whose inputs stay above 0.5 cannot turn 1e-7 into 0.25: that is divergent. */
START_TEST(test_div_far_from_pole_is_divergent)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 100;
    double one[100], xa[100], xb[100], da[100], db[100];
    fx_random(xb, n, 101);
    for (int64_t i = 0; i < n; i++) {
        one[i] = 1.0;
        xb[i] = 0.5 + 0.5 * fabs(xb[i]);
    }
    memcpy(xa, xb, sizeof xa);
    fx_perturb(xa, n, 1e-7, 102);
    for (int64_t i = 0; i < n; i++) {
        da[i] = 1.0 / (float)xa[i];
        db[i] = 1.0 / (float)xb[i];
    }
    da[10] += 0.5;
    fx_pair(a, b, "num", "Relu", 1, "", n, 0, one, one);
    fx_pair(a, b, "x", "Gemm", 16, "", n, 0, xa, xb);
    fx_pair(a, b, "d", "Div", 1, "num,x", n, 0, da, db);
    json_t *j = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(j, "d"), "verdict"), "divergent");
    ck_assert_str_eq(fx_str(j, "first_divergent"), "d");
    json_decref(j);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("boundary");
    TCase *tc = tcase_create("boundary");
    tcase_add_test(tc, test_floor_near_steps_both_ways);
    tcase_add_test(tc, test_div_near_pole_is_amplified);
    tcase_add_test(tc, test_log_near_pole_is_amplified);
    tcase_add_test(tc, test_div_far_from_pole_is_divergent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
