/*
 * check_diff.c: tests of engine/compare/diff.c with hand-made runs: two model files of one
 * network (BatchNormalization folded into the Conv in one of them) compared layer by layer
 * by their output tensors' names, with the layers that have no counterpart listed and the
 * bound of a layer made of a different chain of ops on each side; no pairing by position
 * across different model files.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

static int
in_list(json_t *list, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return 1;
    }
    return 0;
}

/*
 * a: conv1 (Conv, 64 terms) -> bn1 (BatchNormalization) -> relu1 -> fc.
 * b: bn1 (the Conv with the normalization folded in) -> relu1 -> fc.
 * bn1 differs by 3e-6 of its scale, which a 64-term Conv's rounding covers (3.1e-5) and a
 * BatchNormalization's alone (4.8e-7) does not.
 */
START_TEST(test_folded_batchnorm)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "model.sha256", json_string("model-with-bn"));
    fx_set(b, "model.sha256", json_string("model-folded"));
    const int64_t n = 256;
    double c[256], y[256], ya[256], r[256], ra[256], z[256], za[256];
    fx_random(c, n, 401);
    fx_random(y, n, 402);
    memcpy(ya, y, sizeof ya);
    fx_perturb(ya, n, 3e-6, 403);
    for (int64_t i = 0; i < n; i++) {
        r[i] = fmax(y[i], 0);
        ra[i] = fmax(ya[i], 0);
    }
    fx_random(z, n, 404);
    memcpy(za, z, sizeof za);
    fx_perturb(za, n, 1e-7, 405);
    fx_layer(a, "conv1", "Conv", 64, "", fx_f32_of(n, 0, c));
    fx_layer(a, "bn1", "BatchNormalization", 1, "conv1", fx_f32_of(n, 0, ya));
    fx_layer(a, "relu1", "Relu", 1, "bn1", fx_f32_of(n, 0, ra));
    fx_layer(a, "fc", "Gemm", 16, "relu1", fx_f32_of(n, 0, za));
    fx_layer(b, "bn1", "Conv", 64, "", fx_f32_of(n, 0, y));
    fx_layer(b, "relu1", "Relu", 1, "bn1", fx_f32_of(n, 0, r));
    fx_layer(b, "fc", "Gemm", 16, "relu1", fx_f32_of(n, 0, z));
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(d, "mode"), "models");
    json_t *m = json_object_get(d, "matched");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "layers")), 3);
    ck_assert(in_list(json_object_get(m, "only_a"), "conv1"));
    ck_assert_int_eq(json_array_size(json_object_get(m, "only_a")), 1);
    ck_assert_int_eq(json_array_size(json_object_get(m, "only_b")), 0);
    json_t *bn = fx_layer_json(d, "bn1");
    ck_assert_str_eq(fx_str(bn, "op_a"), "BatchNormalization");
    ck_assert_str_eq(fx_str(bn, "op_b"), "Conv");
    ck_assert_msg(strcmp(fx_str(bn, "verdict"), "noise") == 0, "bn1 is %s",
                  fx_str(bn, "verdict"));
    ck_assert_str_eq(fx_str(fx_layer_json(d, "conv1"), "verdict"), "incomparable");
    ck_assert(json_is_null(json_object_get(d, "first_divergent")));
    ck_assert_msg(strstr(fx_str(d, "explanation"), "conv1") != NULL, "%s",
                  fx_str(d, "explanation"));
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* Different model files with different names: nothing is paired by position. */
START_TEST(test_no_position_pairing_across_models)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "model.sha256", json_string("one"));
    fx_set(b, "model.sha256", json_string("two"));
    double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fx_layer(a, "x", "Relu", 1, "", fx_f32_of(8, 0, v));
    fx_layer(b, "p", "Relu", 1, "", fx_f32_of(8, 0, v));
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *m = json_object_get(d, "matched");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "layers")), 0);
    ck_assert(in_list(json_object_get(m, "only_a"), "x"));
    ck_assert(in_list(json_object_get(m, "only_b"), "p"));
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * A replay r (float32) of a float64 run s: every layer of r computed from s's layers rounded
 * to float32. x is the correctly rounded value; fc makes a TF32-sized error of its own; f, a
 * Floor of fc, flips where rounding s's fc to float32 crossed an integer; out reads s's f, so
 * its own computation is exact: no error inherited. The cause is fc; f is amplified by the
 * rounding of its inputs and makes no error of its own. a is the TF32 run itself: fc as r's,
 * then f and out from its own fc.
 */
#define RN 200

struct replay_data {
    double x[RN], fc[RN], fcr[RN], f[RN], fr[RN], out[RN];
};

static void
replay_case(struct fx_run *r, struct fx_run *s, struct fx_run *a, struct replay_data *v)
{
    fx_set(r, "replay", json_pack("{s:s}", "of", "s"));
    fx_set(s, "backend", json_string("cpu64"));
    fx_random(v->x, RN, 501);
    fx_random(v->fc, RN, 502);
    for (int i = 0; i < RN; i++)
        v->fc[i] *= 4;
    v->fc[7] = 3.0 - 1e-8; /* rounds to 3.0f: the Floor flips */
    memcpy(v->fcr, v->fc, sizeof v->fcr);
    fx_perturb(v->fcr, RN, 4e-4, 503);
    v->fcr[7] = (float)v->fc[7];
    for (int i = 0; i < RN; i++) {
        v->f[i] = floor(v->fc[i]);
        v->fr[i] = floor((float)v->fc[i]); /* r's Floor read s's fc, rounded */
        v->out[i] = 2 * v->f[i];
    }
    fx_layer(s, "x", "Gemm", 64, "", fx_f64(RN, 0, v->x));
    fx_layer(s, "fc", "Gemm", 64, "x", fx_f64(RN, 0, v->fc));
    fx_layer(s, "f", "Floor", 1, "fc", fx_f64(RN, 0, v->f));
    fx_layer(s, "out", "Mul", 1, "f", fx_f64(RN, 0, v->out));
    fx_layer(r, "x", "Gemm", 64, "", fx_f32_of(RN, 0, v->x));
    fx_layer(r, "fc", "Gemm", 64, "x", fx_f32_of(RN, 0, v->fcr));
    fx_layer(r, "f", "Floor", 1, "fc", fx_f32_of(RN, 0, v->fr));
    fx_layer(r, "out", "Mul", 1, "f", fx_f32_of(RN, 0, v->out));
    if (a == NULL)
        return;
    double fa[RN], oa[RN];
    for (int i = 0; i < RN; i++) {
        fa[i] = floor((float)v->fcr[i]);
        oa[i] = 2 * fa[i];
    }
    fx_layer(a, "x", "Gemm", 64, "", fx_f32_of(RN, 0, v->x));
    fx_layer(a, "fc", "Gemm", 64, "x", fx_f32_of(RN, 0, v->fcr));
    fx_layer(a, "f", "Floor", 1, "fc", fx_f32_of(RN, 0, fa));
    fx_layer(a, "out", "Mul", 1, "f", fx_f32_of(RN, 0, oa));
}

START_TEST(test_replay_mode)
{
    struct fx_run *r = fx_run_new("r"), *s = fx_run_new("s");
    struct replay_data v;
    replay_case(r, s, NULL, &v);
    json_t *d = fx_diff_json(r, s, NULL);
    ck_assert_str_eq(fx_str(d, "mode"), "replay");
    ck_assert_str_eq(fx_str(d, "cause"), "fc");
    ck_assert_str_eq(fx_str(d, "first_divergent"), "fc");
    json_t *fc = fx_layer_json(d, "fc"), *f = fx_layer_json(d, "f");
    ck_assert_str_eq(fx_str(fc, "arithmetic"), "TF32 or FP16");
    ck_assert_str_eq(fx_str(f, "verdict"), "amplified");
    ck_assert_msg(strstr(fx_str(f, "reason"), "rounded") != NULL, "%s", fx_str(f, "reason"));
    ck_assert_int_ge(json_integer_value(json_object_get(f, "near_boundary")), 1);
    json_t *own = json_object_get(f, "own");
    ck_assert_msg(json_is_object(own) && json_number_value(json_object_get(own, "err")) == 0,
                  "f has no error of its own");
    ck_assert_str_eq(fx_str(fx_layer_json(d, "out"), "verdict"), "identical");
    json_decref(d);
    fx_run_free(r);
    fx_run_free(s);
}
END_TEST

START_TEST(test_diff_with_replay)
{
    struct fx_run *r = fx_run_new("r"), *s = fx_run_new("s"), *a = fx_run_new("a");
    struct replay_data v;
    replay_case(r, s, a, &v);
    struct gd_diff *d = NULL;
    struct gd_err err = {0};
    ck_assert_msg(gd_diff_runs_replay(fx_view(a), fx_view(s), NULL, fx_view(r), 1e-8, 1e-5, &d,
                                      &err) == 0, "%s", err.msg);
    ck_assert(d->has_replay);
    ck_assert_str_eq(d->replay_of, "s");
    ck_assert_int_ge(d->cause, 0);
    ck_assert_str_eq(d->layers[d->cause].name, "fc");
    for (int i = 0; i < d->n_layers; i++) {
        const struct gd_diff_layer *l = &d->layers[i];
        ck_assert(l->has_own);
        int own = l->own_verdict == GD_VERDICT_DIVERGENT;
        ck_assert_msg(own == (strcmp(l->name, "fc") == 0), "%s: own verdict %s", l->name,
                      gd_verdict_name(l->own_verdict));
    }
    ck_assert_msg(strstr(d->explanation, "the cause") != NULL, "%s", d->explanation);
    gd_diff_free(d);
    /* a replay of neither run is refused */
    struct fx_run *t = fx_run_new("t");
    d = NULL;
    ck_assert_int_eq(gd_diff_runs_replay(fx_view(a), fx_view(t), NULL, fx_view(r), 1e-8, 1e-5,
                                         &d, &err),
                     GD_EINVAL);
    ck_assert_ptr_null(d);
    fx_run_free(t);
    fx_run_free(a);
    fx_run_free(r);
    fx_run_free(s);
}
END_TEST

/*
 * gd_diff_set_threads: the layers measured on 4 threads give the diff measured on one, field
 * for field (a chain of 40 layers against a truth, some within noise, some divergent, one
 * with shapes that differ), and an out-of-range count is refused.
 */
START_TEST(test_threads_same_diff)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b"), *t = fx_run_new("t");
    const int64_t n = 512;
    double v[512], va[512], vb[512];
    char name[16], prev[16] = "";
    for (int k = 0; k < 40; k++) {
        snprintf(name, sizeof name, "l%02d", k);
        fx_random(v, n, 1000 + (uint64_t)k);
        memcpy(va, v, sizeof va);
        memcpy(vb, v, sizeof vb);
        fx_perturb(va, n, k % 5 == 0 ? 1e-3 : 1e-7, 2000 + (uint64_t)k);
        fx_perturb(vb, n, 1e-7, 3000 + (uint64_t)k);
        int64_t rows = k == 17 ? 8 : 1; /* l17: shapes differ between a and b */
        fx_layer(a, name, "Gemm", 64, prev, fx_f32_of(rows, n / rows, va));
        fx_layer(b, name, "Gemm", 64, prev, fx_f32_of(1, n, vb));
        fx_layer(t, name, "Gemm", 64, prev, fx_f64(1, n, v));
        snprintf(prev, sizeof prev, "%s", name);
    }
    ck_assert_int_eq(gd_diff_set_threads(0), GD_EINVAL);
    ck_assert_int_eq(gd_diff_set_threads(257), GD_EINVAL);
    ck_assert_int_eq(gd_diff_set_threads(1), 0);
    json_t *one = fx_diff_json(a, b, t);
    ck_assert_int_eq(gd_diff_set_threads(4), 0);
    json_t *four = fx_diff_json(a, b, t);
    ck_assert_int_eq(gd_diff_set_threads(1), 0);
    ck_assert_str_eq(fx_str(fx_layer_json(one, "l05"), "verdict"), "divergent");
    ck_assert_str_eq(fx_str(fx_layer_json(one, "l17"), "verdict"), "incomparable");
    char *s1 = json_dumps(one, JSON_SORT_KEYS), *s4 = json_dumps(four, JSON_SORT_KEYS);
    ck_assert_ptr_nonnull(s1);
    ck_assert_ptr_nonnull(s4);
    ck_assert_msg(strcmp(s1, s4) == 0, "the diffs on 1 and 4 threads differ");
    free(s1);
    free(s4);
    json_decref(one);
    json_decref(four);
    fx_run_free(a);
    fx_run_free(b);
    fx_run_free(t);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("diff");
    TCase *tc = tcase_create("diff");
    tcase_add_test(tc, test_folded_batchnorm);
    tcase_add_test(tc, test_no_position_pairing_across_models);
    tcase_add_test(tc, test_replay_mode);
    tcase_add_test(tc, test_diff_with_replay);
    tcase_add_test(tc, test_threads_same_diff);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
