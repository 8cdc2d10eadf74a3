/*
 * check_diff_view.c: server/diff_view.c, a diff's view from its JSON: the summary keeps the
 * diff's own fields and names in full the layers the dashboard tells of (first divergent,
 * amplifiers, the cause and own errors, the last compared, the truth's layer), counts
 * verdicts and ops, says who is right over the layers where the runs differ beyond noise,
 * caps long lists with their counts, and carries an overview of one letter and three
 * numbers per layer; each row is the layer with its position, new fields included; a text
 * that is no diff is damaged storage.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_view.h"

static json_t *
meta_of(void *user, const char *id)
{
    int *calls = user;
    (*calls)++;
    return json_pack("{s:s, s:s, s:i}", "id", id, "backend", "cpu", "n_layers", 7);
}

/*
 * Seven layers: c0 identical, c1 noise, d2 divergent (the first divergent; own error beyond
 * its bound), n3 noise, a4 amplified (an amplifier), x5 incomparable (only in b), with the
 * truth: right a, both, a, both, a; and ratio, decided_by and ulp_scaled on d2 only.
 */
static const char DIFF[] =
    "{\"a\":{\"id\":\"11111111-1111-4111-8111-111111111111\"},"
    "\"b\":{\"id\":\"22222222-2222-4222-8222-222222222222\"},"
    "\"truth\":{\"id\":\"33333333-3333-4333-8333-333333333333\"},\"replay\":null,\"mode\":\"runs\","
    "\"matched\":{\"layers\":5,\"of_a\":5,\"of_b\":6,\"only_a\":[],\"only_b\":[\"x5\"]},"
    "\"first_divergent\":\"d2\",\"first_observed\":\"d2\",\"start_known\":true,\"cause\":\"d2\","
    "\"truth_outcome\":\"a\",\"amplifiers\":[\"a4\"],\"explanation\":\"d2 diverges.\","
    "\"env_diff\":[],\"layers\":["
    "{\"name\":\"c0\",\"op\":\"Conv\",\"verdict\":\"identical\",\"err\":0,\"max_abs\":0,"
    "\"inputs\":[],\"rows\":[],\"truth\":{\"right\":\"both\"}},"
    "{\"name\":\"c1\",\"op\":\"Relu\",\"verdict\":\"noise\",\"err\":1e-7,\"max_abs\":2e-7,"
    "\"inputs\":[\"c0\"],\"rows\":[],\"truth\":{\"right\":\"both\"}},"
    "{\"name\":\"d2\",\"op\":\"Gemm\",\"verdict\":\"divergent\",\"err\":0.001,\"max_abs\":0.5,"
    "\"inputs\":[\"c1\"],\"rows\":[0,1,2],\"ratio\":72.5,\"decided_by\":\"max\",\"ulp_scaled\":"
    "1234,"
    "\"truth\":{\"right\":\"a\"},\"own\":{\"verdict\":\"divergent\",\"err\":0.001}},"
    "{\"name\":\"n3\",\"op\":\"Relu\",\"verdict\":\"noise\",\"err\":2e-7,"
    "\"max_abs\":9.5367431640625e-07,\"scale\":3.0,\"dtype\":\"float32\","
    "\"inputs\":[\"d2\"],\"rows\":[],\"truth\":{\"right\":\"both\"},"
    "\"own\":{\"verdict\":\"noise\",\"err\":0}},"
    "{\"name\":\"a4\",\"op\":\"Floor\",\"verdict\":\"amplified\",\"amplifier\":true,\"err\":0.25,"
    "\"max_abs\":1,\"inputs\":[\"n3\"],\"rows\":[4],\"truth\":{\"right\":\"a\"}},"
    "{\"name\":\"x5\",\"op\":\"Gemm\",\"verdict\":\"incomparable\",\"index_a\":-1,\"index_b\":5},"
    "{\"name\":\"y6\",\"op\":\"\",\"verdict\":\"incomparable\",\"index_a\":-1,\"index_b\":6}]}";

static void
make(struct srv_diff_view *v, int *calls)
{
    struct gd_err err;
    ck_assert_msg(srv_diff_view_make(DIFF, strlen(DIFF), meta_of, calls, v, &err) == 0, "%s",
                  err.msg);
}

START_TEST(summary_fields)
{
    int calls = 0;
    struct srv_diff_view v;
    make(&v, &calls);
    json_error_t jerr;
    json_t *s = json_loads(v.summary, 0, &jerr);
    ck_assert_msg(s != NULL, "the summary is JSON: %s", jerr.text);
    ck_assert_int_eq(v.n_layers, 7);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "n_layers")), 7);
    ck_assert_str_eq(json_string_value(json_object_get(s, "first_divergent")), "d2");
    ck_assert_str_eq(json_string_value(json_object_get(s, "explanation")), "d2 diverges.");
    ck_assert_ptr_null(json_object_get(s, "layers_all"));
    /* the runs' documents, asked for once per run of the diff (a, b, truth; no replay) */
    ck_assert_int_eq(calls, 3);
    json_t *runs = json_object_get(s, "runs");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(runs, "truth"), "id")),
                     "33333333-3333-4333-8333-333333333333");
    ck_assert(json_is_null(json_object_get(runs, "replay")));
    /* counts: 1 identical, 2 noise, 1 divergent, 1 amplified, 2 incomparable */
    json_t *vc = json_object_get(s, "verdicts");
    ck_assert_int_eq(json_integer_value(json_object_get(vc, "noise")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(vc, "incomparable")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(vc, "amplified")), 1);
    json_t *ops = json_object_get(s, "ops");
    ck_assert_int_eq(json_integer_value(json_object_get(ops, "Relu")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(ops, "Gemm")), 2);
    ck_assert_ptr_null(json_object_get(ops, "")); /* an op not recorded is no op */
    ck_assert_str_eq(json_string_value(json_object_get(s, "last_compared")), "a4");
    ck_assert_int_eq(json_integer_value(json_object_get(s, "n_own_error")), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(s, "own_error"), 0)), "d2");
    ck_assert_int_eq(json_integer_value(json_object_get(s, "n_amplifiers")), 1);
    json_decref(s);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(named_layers)
{
    int calls = 0;
    struct srv_diff_view v;
    make(&v, &calls);
    json_t *s = json_loads(v.summary, 0, NULL);
    json_t *named = json_object_get(s, "layers");
    /* d2 (first divergent, cause, own error, the truth's layer), a4 (amplifier, the last
     * compared): two layers, each once, with its position */
    ck_assert_int_eq(json_object_size(named), 2);
    json_t *d2 = json_object_get(named, "d2"), *a4 = json_object_get(named, "a4");
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "i")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(a4, "i")), 4);
    ck_assert_int_eq(json_array_size(json_object_get(d2, "rows")), 3);
    ck_assert_double_eq(json_number_value(json_object_get(d2, "ratio")), 72.5);
    json_decref(s);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(truth_over_the_divergent_layers)
{
    int calls = 0;
    struct srv_diff_view v;
    make(&v, &calls);
    json_t *s = json_loads(v.summary, 0, NULL);
    json_t *t = json_object_get(s, "truth_summary");
    /* The runs differ beyond noise (d2, a4): those two are the scope; a is right at both, b
     * at neither; told at d2, the first where a side is not right. */
    ck_assert(json_is_true(json_object_get(t, "diverged")));
    ck_assert_int_eq(json_integer_value(json_object_get(t, "scope")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(t, "n_a")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(t, "n_b")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(t, "at")), "d2");
    json_decref(s);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(overview)
{
    int calls = 0;
    struct srv_diff_view v;
    make(&v, &calls);
    json_t *s = json_loads(v.summary, 0, NULL);
    json_t *o = json_object_get(s, "overview");
    ck_assert_str_eq(json_string_value(json_object_get(o, "verdicts")), "indnaxx");
    json_t *err = json_object_get(o, "err"), *ulp = json_object_get(o, "ulps_at_scale");
    ck_assert_int_eq(json_array_size(err), 7);
    ck_assert_double_eq_tol(json_number_value(json_array_get(err, 2)), 0.001, 1e-12);
    ck_assert(json_is_null(json_array_get(err, 5))); /* incomparable: no error */
    /* the engine's, to the overview's three digits */
    ck_assert_double_eq(json_number_value(json_array_get(ulp, 2)), 1230);
    /* n3: 2^-20 at a scale of 3 (floats 2^-22 apart in [2, 4)): 4 ULPs, not a raw count */
    ck_assert_double_eq(json_number_value(json_array_get(ulp, 3)), 4);
    ck_assert(json_is_null(json_array_get(ulp, 0))); /* no dtype or scale: null, never made up */
    ck_assert(json_is_null(json_array_get(ulp, 5))); /* incomparable */
    json_decref(s);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(rows)
{
    int calls = 0;
    struct srv_diff_view v;
    make(&v, &calls);
    ck_assert_str_eq(v.rows[2].name, "d2");
    ck_assert_str_eq(v.rows[2].op, "Gemm");
    ck_assert_str_eq(v.rows[2].verdict, "divergent");
    ck_assert_double_eq_tol(v.rows[2].err, 0.001, 1e-15);
    ck_assert(isnan(v.rows[5].err));
    json_t *r = json_loads(v.rows[2].row, 0, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(json_integer_value(json_object_get(r, "i")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "inputs"), 0)), "c1");
    ck_assert_int_eq(json_array_size(json_object_get(r, "rows")), 3);
    /* fields this build does not know pass through */
    ck_assert_str_eq(json_string_value(json_object_get(r, "decided_by")), "max");
    ck_assert_double_eq(json_number_value(json_object_get(r, "ulp_scaled")), 1234);
    ck_assert_double_eq(json_number_value(json_object_get(r, "ulps_at_scale")), 1234);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "own"), "verdict")),
                     "divergent");
    json_decref(r);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(long_lists_capped)
{
    /* 250 amplifiers listed and 250 layers only in b: 200 of each named, the counts whole */
    json_t *d = json_pack("{s:{s:s}, s:{s:s}, s:n, s:[], s:{s:i, s:[], s:[]}}", "a", "id",
                          "11111111-1111-4111-8111-111111111111", "b", "id",
                          "22222222-2222-4222-8222-222222222222", "truth", "amplifiers", "matched",
                          "layers", 0, "only_a", "only_b");
    json_t *layers = json_array();
    for (int i = 0; i < 250; i++) {
        char name[16];
        snprintf(name, sizeof name, "l%03d", i);
        json_array_append_new(json_object_get(d, "amplifiers"), json_string(name));
        json_array_append_new(json_object_get(json_object_get(d, "matched"), "only_b"),
                              json_string(name));
        json_array_append_new(layers, json_pack("{s:s, s:s, s:s, s:b}", "name", name, "op", "Floor",
                                                "verdict", "amplified", "amplifier", 1));
    }
    json_object_set_new(d, "layers", layers);
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    int calls = 0;
    struct srv_diff_view v;
    struct gd_err err;
    ck_assert_msg(srv_diff_view_make(text, strlen(text), meta_of, &calls, &v, &err) == 0, "%s",
                  err.msg);
    free(text);
    json_t *s = json_loads(v.summary, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "n_amplifiers")), 250);
    ck_assert_int_eq(json_array_size(json_object_get(s, "amplifiers")), SRV_DIFF_VIEW_LIST_MAX);
    json_t *m = json_object_get(s, "matched");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "n_only_b")), 250);
    ck_assert_int_eq(json_array_size(json_object_get(m, "only_b")), SRV_DIFF_VIEW_LIST_MAX);
    /* the amplifiers named in full: 200, and the last compared (l249) besides */
    ck_assert_int_eq(json_object_size(json_object_get(s, "layers")), SRV_DIFF_VIEW_LIST_MAX + 1);
    ck_assert(json_is_null(json_object_get(s, "truth_summary")));
    ck_assert_int_eq(calls, 2);
    json_decref(s);
    srv_diff_view_fini(&v);
}
END_TEST

START_TEST(damaged_text)
{
    struct srv_diff_view v;
    memset(&v, 0x5a, sizeof v);
    struct gd_err err;
    int calls = 0;
    ck_assert_int_eq(srv_diff_view_make("{\"layers\":", 10, meta_of, &calls, &v, &err), GD_EIO);
    ck_assert_int_eq(srv_diff_view_make("{\"a\":1}", 7, meta_of, &calls, &v, &err), GD_EIO);
    ck_assert_int_eq(calls, 0);
    /* the view is written only on success */
    unsigned char *p = (unsigned char *)&v;
    for (size_t i = 0; i < sizeof v; i++)
        ck_assert_int_eq(p[i], 0x5a);
}
END_TEST

START_TEST(codes)
{
    ck_assert_int_eq(srv_diff_view_code("identical"), 'i');
    ck_assert_int_eq(srv_diff_view_code("nonfinite"), 'f');
    ck_assert_int_eq(srv_diff_view_code("incomparable"), 'x');
    ck_assert_int_eq(srv_diff_view_code("unknown"), 'u');
    ck_assert_int_eq(srv_diff_view_code("something else"), 'u');
    ck_assert_int_eq(srv_diff_view_code(NULL), 'u');
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("diff_view");
    TCase *tc = tcase_create("view");
    tcase_add_test(tc, summary_fields);
    tcase_add_test(tc, named_layers);
    tcase_add_test(tc, truth_over_the_divergent_layers);
    tcase_add_test(tc, overview);
    tcase_add_test(tc, rows);
    tcase_add_test(tc, long_lists_capped);
    tcase_add_test(tc, damaged_text);
    tcase_add_test(tc, codes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
