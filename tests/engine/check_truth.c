/*
 * check_truth.c: tests of engine/compare/truth.c with hand-made runs against a float64
 * reference: a side is right only within its rounding bound of the reference, so the
 * outcome is a, b, both or neither, per layer and overall; closer is not right; and the rows
 * each side has off the reference.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

#define N 100

struct case3 {
    struct fx_run *a, *b, *t;
};

/* One 84-term Gemm "out" of shape (20, 5): truth t, a = t (1 + ea r), b = t (1 + eb r'). */
static struct case3
make(double ea, double eb)
{
    struct case3 c = {fx_run_new("a"), fx_run_new("b"), fx_run_new("t")};
    fx_set(c.t, "backend", json_string("cpu64"));
    double t[N], a[N], b[N];
    fx_random(t, N, 201);
    for (int i = 0; i < N; i++)
        t[i] = 1.0 + t[i];
    memcpy(a, t, sizeof a);
    memcpy(b, t, sizeof b);
    fx_perturb(a, N, ea, 202);
    fx_perturb(b, N, eb, 203);
    fx_pair(c.a, c.b, "out", "Gemm", 84, "", 20, 5, a, b);
    fx_layer(c.t, "out", "Gemm", 84, "", fx_f64(20, 5, t));
    return c;
}

static void
done(struct case3 *c)
{
    fx_run_free(c->a);
    fx_run_free(c->b);
    fx_run_free(c->t);
}

static json_t *
truth_of(json_t *d, const char *layer)
{
    json_t *t = json_object_get(fx_layer_json(d, layer), "truth");
    ck_assert_msg(json_is_object(t), "layer %s has no truth", layer);
    return t;
}

/* Both sides about 100% of the layer's scale away from float64: neither is right. */
START_TEST(test_neither_right)
{
    struct case3 c = make(1.0, 1.0);
    json_t *d = fx_diff_json(c.a, c.b, c.t);
    ck_assert_str_eq(fx_str(truth_of(d, "out"), "right"), "neither");
    ck_assert_str_eq(fx_str(d, "truth_outcome"), "neither");
    const char *e = fx_str(d, "explanation");
    ck_assert_msg(strstr(e, "right one") == NULL, "%s", e);
    ck_assert_msg(strstr(e, "Neither run is right") != NULL, "%s", e);
    json_decref(d);
    done(&c);
}
END_TEST

/* a computed the correctly rounded values, b is 1% off: a is right, b is not. */
START_TEST(test_a_right)
{
    struct case3 c = make(0.0, 1e-2);
    json_t *d = fx_diff_json(c.a, c.b, c.t);
    json_t *t = truth_of(d, "out");
    ck_assert_str_eq(fx_str(t, "right"), "a");
    ck_assert_str_eq(fx_str(t, "closer"), "a");
    ck_assert_str_eq(fx_str(d, "truth_outcome"), "a");
    ck_assert_msg(strstr(fx_str(d, "explanation"), "Run a is right") != NULL, "%s",
                  fx_str(d, "explanation"));
    json_decref(d);
    done(&c);
}
END_TEST

/* 30% off is closer than 100% off, and still not right. */
START_TEST(test_closer_is_not_right)
{
    struct case3 c = make(0.3, 1.0);
    json_t *d = fx_diff_json(c.a, c.b, c.t);
    json_t *t = truth_of(d, "out");
    ck_assert_str_eq(fx_str(t, "closer"), "a");
    ck_assert_str_eq(fx_str(t, "right"), "neither");
    ck_assert_str_eq(fx_str(d, "truth_outcome"), "neither");
    const char *e = fx_str(d, "explanation");
    ck_assert_msg(strstr(e, "right one") == NULL && strstr(e, "Run a is right") == NULL, "%s", e);
    json_decref(d);
    done(&c);
}
END_TEST

/* With atol 0.01: a is off the reference in rows 2 and 5, b in rows 1, 2 and 3. */
START_TEST(test_rows_off_the_truth)
{
    struct case3 c = {fx_run_new("a"), fx_run_new("b"), fx_run_new("t")};
    double t[N], a[N], b[N];
    fx_random(t, N, 211);
    memcpy(a, t, sizeof a);
    memcpy(b, t, sizeof b);
    a[2 * 5 + 1] += 0.05, a[5 * 5 + 4] -= 0.05;
    b[1 * 5] += 0.05, b[2 * 5 + 2] += 0.05, b[3 * 5 + 3] -= 0.05;
    fx_pair(c.a, c.b, "out", "Gemm", 84, "", 20, 5, a, b);
    fx_layer(c.t, "out", "Gemm", 84, "", fx_f64(20, 5, t));
    json_t *d = fx_diff_json_tol(c.a, c.b, c.t, 0.01, 0);
    json_t *tr = truth_of(d, "out");
    ck_assert_int_eq(json_integer_value(json_object_get(tr, "rows_a")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(tr, "rows_b")), 3);
    ck_assert_str_eq(fx_str(tr, "right"), "neither");
    json_decref(d);
    done(&c);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("truth");
    TCase *tc = tcase_create("truth");
    tcase_add_test(tc, test_neither_right);
    tcase_add_test(tc, test_a_right);
    tcase_add_test(tc, test_closer_is_not_right);
    tcase_add_test(tc, test_rows_off_the_truth);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
