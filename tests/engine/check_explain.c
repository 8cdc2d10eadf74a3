/*
 * check_explain.c: tests of engine/compare/explain.c with hand-made runs: different inputs
 * said first; no ratio below 1 given as the reason a layer is divergent; no cause made of a
 * field one run does not record; partial data said as such ("first observed", how many
 * layers of how many, the start may lie before); which layers changed algorithm when the
 * batch size or the algorithm choice differs, and whether algorithms or library versions
 * differ between runs with the same knobs; a run in bitwise mode named so.
 */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

static const char *
explanation(json_t *d)
{
    return fx_str(d, "explanation");
}

#define CONTAINS(d, text)                                                                    \
    ck_assert_msg(strstr(explanation(d), (text)) != NULL, "no \"%s\" in: %s", (text),       \
                  explanation(d))
#define LACKS(d, text)                                                                       \
    ck_assert_msg(strstr(explanation(d), (text)) == NULL, "\"%s\" in: %s", (text),          \
                  explanation(d))

/* A 16-term Gemm "out" of n values, b = a (1 + rel r). */
static void
gemm_out(struct fx_run *a, struct fx_run *b, int64_t n, double rel, uint64_t seed)
{
    double *va = malloc((size_t)n * sizeof *va), *vb = malloc((size_t)n * sizeof *vb);
    fx_random(va, n, seed);
    memcpy(vb, va, (size_t)n * sizeof *vb);
    fx_perturb(vb, n, rel, seed + 1);
    fx_pair(a, b, "out", "Gemm", 16, "", n, 0, va, vb);
    free(va);
    free(vb);
}

START_TEST(test_different_inputs_first)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(b, "input.sha256", json_string("other-input"));
    gemm_out(a, b, 64, 1e-3, 301);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert(json_is_true(json_object_get(d, "inputs_differ")));
    ck_assert_msg(strncmp(explanation(d), "The runs had different inputs", 29) == 0, "%s",
                  explanation(d));
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * A difference of up to 7.5e-6 of each value: max 7.5e-6 is within the bound (7.9e-6), the
 * median (of |a-b| over the largest value, about 7.5e-6 times the median of |y| |r|, 1.4e-6)
 * is not within its own (1.2e-6). The text must give the ratio that is over 1.
 */
START_TEST(test_no_ratio_below_one)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    gemm_out(a, b, 4096, 7.5e-6, 311);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert_str_eq(fx_str(fx_layer_json(d, "out"), "verdict"), "divergent");
    const char *e = explanation(d);
    for (const char *p = strstr(e, " times "); p != NULL; p = strstr(p + 1, " times ")) {
        const char *q = p;
        while (q > e && (isdigit((unsigned char)q[-1]) || q[-1] == '.' || q[-1] == 'e' ||
                         q[-1] == '-' || q[-1] == '+'))
            q--;
        double v = strtod(q, NULL);
        ck_assert_msg(v > 1, "\"%.*s\" in: %s", (int)(p - q) + 6, q, e);
    }
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* An engine run's knobs against a framework dump that records none: no cause from them. */
START_TEST(test_no_cause_from_unrecorded_fields)
{
    struct fx_run *a = fx_dump_new("a", "pytorch_gpu"), *b = fx_run_new("b");
    gemm_out(a, b, 64, 1e-2, 321);
    json_t *d = fx_diff_json(a, b, NULL);
    LACKS(d, "(none)");
    LACKS(d, "null");
    LACKS(d, "emulated");
    LACKS(d, "batch size");
    LACKS(d, "is the cause");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * b, a cuda run with TF32 on, against a dump that says nothing of TF32, at TF32's precision:
 * the text may say b used TF32, not that the runs differ in it ("(none) vs true"), and reads
 * "for" as no driver version.
 */
START_TEST(test_tf32_on_one_side_only)
{
    struct fx_run *a = fx_dump_new("a", "paddle_gpu"), *b = fx_run_new("b");
    fx_set(b, "backend", json_string("cuda"));
    fx_set(b, "knobs.tf32", json_true());
    fx_set(b, "env.gpu_name", json_string("NVIDIA H200"));
    fx_set(b, "env.driver", json_string("for"));
    gemm_out(a, b, 512, 8e-4, 331);
    json_t *d = fx_diff_json(a, b, NULL);
    LACKS(d, "(none)");
    LACKS(d, "differ in TF32");
    LACKS(d, "for vs");
    LACKS(d, "TF32 runs come");
    CONTAINS(d, "TF32");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* A run in bitwise mode is named so, and a knob that differs only there is recorded as an
 * arithmetic difference. */
START_TEST(test_bitwise_mode_named)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "backend", json_string("cuda"));
    fx_set(a, "knobs.repro", json_string("bitwise"));
    fx_set(b, "backend", json_string("cuda"));
    fx_set(b, "knobs.repro", json_string("off"));
    gemm_out(a, b, 64, 0, 341);
    json_t *d = fx_diff_json(a, b, NULL);
    CONTAINS(d, "Run a (cuda, bitwise mode) and run b (cuda) are bitwise identical");
    int found = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "env_diff"), i, e) {
        if (strcmp(fx_str(e, "key"), "knobs.repro") == 0) {
            found = 1;
            ck_assert_str_eq(fx_str(e, "category"), "arithmetic");
        }
    }
    ck_assert_msg(found, "knobs.repro is not among the differences");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* Only the output was dumped; the engine run has 12 layers. */
START_TEST(test_partial_data)
{
    struct fx_run *a = fx_dump_new("a", "pytorch_gpu"), *b = fx_run_new("b");
    double v[40], w[40];
    char name[16], prev[16] = "";
    for (int i = 0; i < 11; i++) {
        fx_random(v, 40, 340 + (uint64_t)i);
        snprintf(name, sizeof name, "l%d", i);
        fx_layer(b, name, "Gemm", 16, prev, fx_f32_of(4, 10, v));
        snprintf(prev, sizeof prev, "%s", name);
    }
    fx_random(v, 40, 360);
    memcpy(w, v, sizeof w);
    w[3] += 0.25;
    fx_layer(b, "output", "Gemm", 84, "l10", fx_f32_of(4, 10, v));
    fx_layer(a, "output", NULL, 0, NULL, fx_f32_of(4, 10, w));
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert(json_is_null(json_object_get(d, "first_divergent")));
    ck_assert_str_eq(fx_str(d, "first_observed"), "output");
    json_t *m = json_object_get(d, "matched");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "layers")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "of_b")), 12);
    CONTAINS(d, "1 of 12");
    CONTAINS(d, "first observed");
    CONTAINS(d, "may lie before");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* conv -> relu -> out, every layer's values differing at rounding level only. */
static void
three_layers(struct fx_run *a, struct fx_run *b, const char *algo_a, const char *algo_b)
{
    double v[64], w[64];
    const char *names[] = {"conv", "relu", "out"}, *ops[] = {"Conv", "Relu", "Gemm"};
    const char *ins[] = {"", "conv", "relu"};
    for (int i = 0; i < 3; i++) {
        fx_random(v, 64, 370 + (uint64_t)i);
        memcpy(w, v, sizeof w);
        if (i != 1)
            fx_perturb(w, 64, 1e-7, 380 + (uint64_t)i);
        fx_pair(a, b, names[i], ops[i], i == 1 ? 1 : 16, ins[i], 64, 0, v, w);
    }
    fx_layer_algo(a, 0, algo_a);
    fx_layer_algo(b, 0, algo_b);
    fx_layer_algo(a, 2, "algo 13 splitk 1");
    fx_layer_algo(b, 2, "algo 13 splitk 1");
}

START_TEST(test_batch_changes_algorithms)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "knobs.batch", json_integer(1));
    three_layers(a, b, "implicit_gemm", "winograd");
    json_t *d = fx_diff_json(a, b, NULL);
    CONTAINS(d, "batch size");
    CONTAINS(d, "conv");
    CONTAINS(d, "summation order");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

START_TEST(test_same_knobs_algorithms_differ)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    three_layers(a, b, "implicit_gemm", "winograd");
    json_t *d = fx_diff_json(a, b, NULL);
    CONTAINS(d, "same knobs");
    CONTAINS(d, "algorithm");
    CONTAINS(d, "conv");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

START_TEST(test_same_knobs_libraries_differ)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "env.cudnn", json_string("9.14.0"));
    fx_set(b, "env.cudnn", json_string("9.19.0"));
    three_layers(a, b, "implicit_gemm", "implicit_gemm");
    json_t *d = fx_diff_json(a, b, NULL);
    CONTAINS(d, "same knobs");
    CONTAINS(d, "same algorithms");
    CONTAINS(d, "cudnn 9.14.0 vs 9.19.0");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST


/* A truth that is not a float64 run (cpu emulating BF16) is named for what it is, with the
 * warning that "right" is then within rounding of it, not of the exact values. */
START_TEST(test_truth_not_float64)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b"), *t = fx_run_new("t");
    fx_set(t, "knobs.emulate", json_string("bf16:gemm"));
    fx_set(b, "knobs.emulate", json_string("tf32:gemm"));
    const int64_t n = 256;
    double *v = malloc((size_t)n * sizeof *v), *vb = malloc((size_t)n * sizeof *vb);
    fx_random(v, n, 401);
    memcpy(vb, v, (size_t)n * sizeof *vb);
    fx_perturb(vb, n, 1e-3, 402);
    fx_pair(a, b, "out", "Gemm", 16, "", 16, 16, v, vb);
    fx_layer(t, "out", "Gemm", 16, "", fx_f32_of(16, 16, v));
    json_t *d = fx_diff_json(a, b, t);
    CONTAINS(d, "The reference run is not a float64 run");
    CONTAINS(d, "the reference run (cpu, emulating bf16:gemm)");
    LACKS(d, "float64 reference");
    ck_assert(json_is_false(json_object_get(d, "truth_float64")));
    json_decref(d);
    fx_set(t, "backend", json_string("cpu64"));
    fx_set(t, "knobs.emulate", json_string("none"));
    d = fx_diff_json(a, b, t);
    CONTAINS(d, "float64 reference");
    LACKS(d, "is not a float64 run");
    ck_assert(json_is_true(json_object_get(d, "truth_float64")));
    json_decref(d);
    free(v), free(vb);
    fx_run_free(a);
    fx_run_free(b);
    fx_run_free(t);
}
END_TEST

/* A float16 run against a bfloat16 one, compared in float32: the difference is the coarser
 * format's (BF16, 7.7 bits), so BF16 explains it, not FP16. */
START_TEST(test_coarser_half_format_named)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "knobs.dtype", json_string("float16"));
    fx_set(b, "knobs.dtype", json_string("bfloat16"));
    enum { N = 512 };
    double v[N];
    fx_random(v, N, 411);
    int64_t shape[2] = {16, 32};
    struct gd_tensor *ta = gd_tensor_new(GD_F16, 2, shape, NULL);
    struct gd_tensor *tb = gd_tensor_new(GD_BF16, 2, shape, NULL);
    ck_assert(ta != NULL && tb != NULL);
    for (int i = 0; i < N; i++) {
        ((uint16_t *)ta->data)[i] = gd_f64_to_f16(v[i]);
        ((uint16_t *)tb->data)[i] = gd_f64_to_bf16(v[i]);
    }
    fx_layer(a, "ln", "LayerNormalization", 32, "", ta);
    fx_layer(b, "ln", "LayerNormalization", 32, "", tb);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *ln = fx_layer_json(d, "ln");
    ck_assert_str_eq(fx_str(ln, "verdict"), "divergent");
    ck_assert(json_is_true(json_object_get(ln, "explained_by_arithmetic")));
    CONTAINS(d, "BF16 explains it");
    LACKS(d, "FP16 explains it");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/*
 * A correct float32 run is off numpy's default tolerances (rtol 1e-5) wherever a long sum
 * rounds: with the defaults the text counts the values that differ and says nothing is
 * outside a tolerance; with tolerances given it counts those outside them.
 */
START_TEST(test_tolerance_wording)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const int64_t n = 256;
    double *v = malloc((size_t)n * sizeof *v), *vb = malloc((size_t)n * sizeof *vb);
    fx_random(v, n, 421);
    memcpy(vb, v, (size_t)n * sizeof *vb);
    fx_perturb(vb, n, 3e-5, 422); /* beyond rtol 1e-5, and beyond a 16-term Gemm's noise */
    fx_pair(a, b, "x", "Gemm", 16, "", 16, 16, v, vb);
    json_t *d = fx_diff_json(a, b, NULL);
    ck_assert(json_is_false(json_object_get(d, "tolerance_given")));
    LACKS(d, "outside atol");
    json_decref(d);
    d = fx_diff_json_tol(a, b, NULL, 1e-6, 0);
    ck_assert(json_is_true(json_object_get(d, "tolerance_given")));
    CONTAINS(d, "outside atol 1e-06 + rtol 0");
    json_decref(d);
    free(v), free(vb);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* A step's values that differ by whole steps have a median relative error above 1/2: the
 * bits are 0, never negative. */
START_TEST(test_no_negative_bits)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    enum { N = 64 };
    double va[N], vb[N];
    for (int i = 0; i < N; i++) {
        va[i] = (double)(i % 3);
        vb[i] = (double)((i + 1) % 3);
    }
    fx_pair(a, b, "f", "Floor", 1, "", 8, 8, va, vb);
    json_t *d = fx_diff_json(a, b, NULL);
    double bits = json_number_value(json_object_get(fx_layer_json(d, "f"), "bits"));
    ck_assert_msg(bits >= 0, "bits %g", bits);
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain");
    tcase_add_test(tc, test_different_inputs_first);
    tcase_add_test(tc, test_no_ratio_below_one);
    tcase_add_test(tc, test_no_cause_from_unrecorded_fields);
    tcase_add_test(tc, test_tf32_on_one_side_only);
    tcase_add_test(tc, test_bitwise_mode_named);
    tcase_add_test(tc, test_partial_data);
    tcase_add_test(tc, test_batch_changes_algorithms);
    tcase_add_test(tc, test_same_knobs_algorithms_differ);
    tcase_add_test(tc, test_same_knobs_libraries_differ);
    tcase_add_test(tc, test_truth_not_float64);
    tcase_add_test(tc, test_coarser_half_format_named);
    tcase_add_test(tc, test_tolerance_wording);
    tcase_add_test(tc, test_no_negative_bits);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
