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

int
main(void)
{
    Suite *s = suite_create("diff");
    TCase *tc = tcase_create("diff");
    tcase_add_test(tc, test_folded_batchnorm);
    tcase_add_test(tc, test_no_position_pairing_across_models);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
