/*
 * check_sweep_summary.c: the sweep's summaries and answers (agent/sweep_summary.c): a run at
 * another batch size against the whole batch, bit for bit, with the differing layers'
 * metrics (values computed here by hand: 3.5 against 3 is 0.5 and 2^21 float32 ULP) and the
 * algorithm changes a GPU run records (the "algo 20 splitk 16" -> "algo 13 splitk
 * 1"); and the answers drawn from a document: the fastest, the cheapest deterministic, the
 * cheapest batch-invariant and the cheapest of both, "not measured" kept apart from "no",
 * the layers that break invariance, and the one-knob effects; what-ifs (CPU emulation) never
 * advised; settings within timing noise of each other (overlapping min-max ranges) not
 * ranked by time but chosen by their error against float64, the others named.
 */
#include <math.h>
#include <string.h>

#include <check.h>

#include "sweep.h"

#define N_LAYERS 2

struct fake_run {
    struct agt_memrun run;
    struct gd_bundle_layer layers[N_LAYERS];
    struct gd_tensor *tensors[N_LAYERS];
};

/* Layers "conv" (4 values) and "fc" (the output, 3 values), with the given data and algos. */
static void
fake(struct fake_run *f, const float *conv, const float *fc, const char *conv_algo,
     const char *fc_algo)
{
    memset(f, 0, sizeof *f);
    int64_t s0[1] = {4}, s1[1] = {3};
    struct gd_err err = {0};
    f->tensors[0] = gd_tensor_new(GD_F32, 1, s0, &err);
    f->tensors[1] = gd_tensor_new(GD_F32, 1, s1, &err);
    memcpy(f->tensors[0]->data, conv, 4 * sizeof(float));
    memcpy(f->tensors[1]->data, fc, 3 * sizeof(float));
    const char *names[N_LAYERS] = {"conv", "fc"}, *ops[N_LAYERS] = {"Conv", "Gemm"};
    const char *algos[N_LAYERS] = {conv_algo, fc_algo};
    for (int i = 0; i < N_LAYERS; i++) {
        f->layers[i].index = i;
        f->layers[i].name = names[i];
        f->layers[i].op = ops[i];
        f->layers[i].algo = algos[i];
        f->layers[i].dtype = GD_F32;
    }
    f->run.n_layers = N_LAYERS;
    f->run.layers = f->layers;
    f->run.tensors = f->tensors;
}

static void
unfake(struct fake_run *f)
{
    for (int i = 0; i < N_LAYERS; i++)
        gd_tensor_free(f->tensors[i]);
}

static const float CONV[4] = {1, -2, 0.25f, 8};
static const float FC[3] = {1, 2, 3};
static const char *CONV_ALGO = "cudnn fwd 1 implicit_precomp_gemm (heuristic)";
static const char *FC_WHOLE = "cublasLt algo 20 tile 18 stages 8 splitk 16";
static const char *FC_ONE = "cublasLt algo 13 tile 15 stages 8 splitk 1";

START_TEST(identical_batch)
{
    struct fake_run a, b;
    fake(&a, CONV, FC, CONV_ALGO, FC_WHOLE);
    fake(&b, CONV, FC, CONV_ALGO, FC_WHOLE);
    json_t *j = NULL;
    struct gd_err err = {0};
    ck_assert_msg(agt_batch_compare(&a.run, &b.run, 8, "fc", 1e-8, 1e-5, &j, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "batch")), 8);
    ck_assert(json_is_true(json_object_get(j, "identical")));
    ck_assert_int_eq(json_array_size(json_object_get(j, "differing_layers")), 0);
    ck_assert(json_is_null(json_object_get(j, "first_differing")));
    ck_assert_int_eq(json_array_size(json_object_get(j, "algo_changes")), 0);
    json_t *out = json_object_get(j, "output");
    ck_assert_str_eq(json_string_value(json_object_get(out, "layer")), "fc");
    ck_assert(json_is_true(json_object_get(out, "identical")));
    ck_assert(json_number_value(json_object_get(out, "max_abs")) == 0.0);
    json_decref(j);
    unfake(&a);
    unfake(&b);
}
END_TEST

START_TEST(the_gemm_moves_with_its_algorithm)
{
    struct fake_run a, b;
    const float fc1[3] = {1, 2, 3.5f};
    fake(&a, CONV, fc1, CONV_ALGO, FC_ONE);
    fake(&b, CONV, FC, CONV_ALGO, FC_WHOLE);
    json_t *j = NULL;
    struct gd_err err = {0};
    ck_assert_msg(agt_batch_compare(&a.run, &b.run, 1, "fc", 1e-8, 1e-5, &j, &err) == 0, "%s",
                  err.msg);
    ck_assert(json_is_false(json_object_get(j, "identical")));
    json_t *differ = json_object_get(j, "differing_layers");
    ck_assert_int_eq(json_array_size(differ), 1);
    ck_assert_str_eq(json_string_value(json_array_get(differ, 0)), "fc");
    json_t *first = json_object_get(j, "first_differing");
    ck_assert_str_eq(json_string_value(json_object_get(first, "layer")), "fc");
    ck_assert_str_eq(json_string_value(json_object_get(first, "op")), "Gemm");
    ck_assert(json_number_value(json_object_get(first, "max_abs")) == 0.5);
    ck_assert_str_eq(json_string_value(json_object_get(first, "algo")), FC_ONE);
    ck_assert_str_eq(json_string_value(json_object_get(first, "reference_algo")), FC_WHOLE);
    json_t *out = json_object_get(j, "output");
    ck_assert(json_is_false(json_object_get(out, "identical")));
    /* float32 ULP in [2, 4) is 2^-22: 0.5 is 2^21 of them */
    ck_assert_int_eq(json_integer_value(json_object_get(out, "max_ulp")), 2097152);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "mismatches")), 1);
    json_t *ch = json_object_get(j, "algo_changes");
    ck_assert_int_eq(json_array_size(ch), 1);
    json_t *c = json_array_get(ch, 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "layer")), "fc");
    ck_assert_str_eq(json_string_value(json_object_get(c, "reference")), FC_WHOLE);
    ck_assert_str_eq(json_string_value(json_object_get(c, "this")), FC_ONE);
    ck_assert(json_is_false(json_object_get(c, "identical")));
    json_decref(j);
    unfake(&a);
    unfake(&b);
    /* an algorithm that changed without changing the bits is listed as such */
    fake(&a, CONV, FC, "cudnn fwd 0 implicit_gemm (heuristic)", FC_WHOLE);
    fake(&b, CONV, FC, CONV_ALGO, FC_WHOLE);
    ck_assert_int_eq(agt_batch_compare(&a.run, &b.run, 2, "fc", 1e-8, 1e-5, &j, &err), 0);
    ck_assert(json_is_true(json_object_get(j, "identical")));
    c = json_array_get(json_object_get(j, "algo_changes"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "layer")), "conv");
    ck_assert(json_is_true(json_object_get(c, "identical")));
    json_decref(j);
    unfake(&a);
    unfake(&b);
}
END_TEST

START_TEST(runs_not_alike)
{
    struct fake_run a, b;
    fake(&a, CONV, FC, CONV_ALGO, FC_WHOLE);
    fake(&b, CONV, FC, CONV_ALGO, FC_WHOLE);
    gd_tensor_free(b.tensors[1]);
    b.tensors[1] = NULL;
    json_t *j = NULL;
    struct gd_err err = {0};
    ck_assert_int_eq(agt_batch_compare(&a.run, &b.run, 1, "fc", 1e-8, 1e-5, &j, &err), GD_EINVAL);
    ck_assert_ptr_null(j);
    ck_assert_msg(strstr(err.msg, "layer fc") != NULL, "%s", err.msg);
    unfake(&a);
    unfake(&b);
}
END_TEST

/* A setting of the document: status ok, its ms (median, least, most), run to run and batch
 * results, its error against float64. */
static json_t *
timed(const char *name, const char *tf32, double ms, double lo, double hi, json_t *layers_identical,
      json_t *batch_identical, const char *first_differing, double err)
{
    json_t *sizes = json_array();
    if (batch_identical != NULL)
        json_array_append_new(sizes, json_pack("{s:i, s:s, s:o, s:o}", "batch", 1, "status", "ok",
                                               "identical", batch_identical, "first_differing",
                                               first_differing
                                                   ? json_pack("{s:s}", "layer", first_differing)
                                                   : json_null()));
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:f, s:f, s:f}, s:{s:o, s:b}, s:{s:o}, "
                     "s:{s:{s:f}, s:b}}",
                     "name", name, "status", "ok", "knobs", "conv_algo", "heuristic", "tf32", tf32,
                     "time", "forward_ms", ms, "forward_min_ms", lo, "forward_max_ms", hi,
                     "run_to_run", "layers_identical", layers_identical, "outputs_identical", 1,
                     "batch", "sizes", sizes, "vs_float64", "output", "max_abs", err, "compared",
                     1);
}

static json_t *
setting(const char *name, int tf32, double ms, json_t *layers_identical, json_t *batch_identical,
        const char *first_differing)
{
    /* ranges of 1% around the median: none of these overlap */
    return timed(name, tf32 ? "on" : "off", ms, ms * 0.99, ms * 1.01, layers_identical,
                 batch_identical, first_differing, tf32 ? 0.25 : 2e-7);
}

static const char *
picked(json_t *ans, const char *which)
{
    return json_string_value(json_object_get(json_object_get(ans, which), "setting"));
}

START_TEST(answers)
{
    json_t *settings = json_array();
    json_array_append_new(settings, setting("slow exact", 0, 4.0, json_true(), json_true(), NULL));
    json_array_append_new(settings, setting("fast", 1, 1.0, json_false(), json_false(), "fc"));
    json_array_append_new(settings,
                          setting("reproducible", 0, 2.0, json_true(), json_false(), "fc"));
    json_array_append_new(settings, setting("one capture", 0, 3.0, json_null(), NULL, NULL));
    json_array_append_new(settings, json_pack("{s:s, s:s, s:s}", "name", "broken", "status",
                                              "failed", "error", "no"));
    json_t *doc = json_pack("{s:o}", "settings", settings);
    agt_sweep_answers(doc);
    json_t *ans = json_object_get(doc, "answers");
    ck_assert_int_eq(json_integer_value(json_object_get(ans, "settings_ok")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(ans, "settings_failed")), 1);
    ck_assert_str_eq(picked(ans, "fastest"), "fast");
    json_t *p = json_object_get(ans, "cheapest_deterministic");
    ck_assert_str_eq(picked(ans, "cheapest_deterministic"), "reproducible");
    ck_assert(json_number_value(json_object_get(p, "x_fastest")) == 2.0);
    ck_assert(json_is_false(json_object_get(p, "within_noise_of_fastest")));
    ck_assert_str_eq(json_string_value(json_object_get(p, "chosen_by")), "time");
    p = json_object_get(ans, "cheapest_batch_invariant");
    ck_assert_str_eq(picked(ans, "cheapest_batch_invariant"), "slow exact");
    ck_assert(json_number_value(json_object_get(p, "x_fastest")) == 4.0);
    ck_assert(json_number_value(json_object_get(p, "vs_float64_max_abs")) == 2e-7);
    ck_assert_str_eq(picked(ans, "cheapest_deterministic_and_batch_invariant"), "slow exact");
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(ans, "batch_breaking_layers"), "fc")),
        2);
    /* per setting: what was measured, and "not measured" (null) apart from "no" */
    json_t *s3 = json_array_get(settings, 3);
    ck_assert(json_is_null(json_object_get(s3, "deterministic")));
    ck_assert(json_is_null(json_object_get(s3, "batch_invariant")));
    ck_assert(json_is_false(json_object_get(json_array_get(settings, 1), "deterministic")));
    ck_assert(json_number_value(json_object_get(json_object_get(s3, "time"), "x_fastest")) == 3.0);
    ck_assert(json_is_null(json_object_get(json_array_get(settings, 4), "deterministic")));
    /* one knob: tf32 off -> on, from each setting at tf32 off with the same other knobs */
    json_t *fx = json_object_get(ans, "knob_effects");
    ck_assert_int_eq(json_array_size(fx), 3);
    json_t *e = json_array_get(fx, 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "knob")), "tf32");
    ck_assert_str_eq(json_string_value(json_object_get(e, "from")), "off");
    ck_assert_str_eq(json_string_value(json_object_get(e, "to")), "on");
    ck_assert_str_eq(json_string_value(json_object_get(e, "base")), "slow exact");
    ck_assert_str_eq(json_string_value(json_object_get(e, "changed")), "fast");
    ck_assert(json_number_value(json_object_get(e, "time_ratio")) == 0.25);
    ck_assert(json_is_false(json_object_get(e, "within_noise")));
    ck_assert(json_number_value(json_object_get(e, "to_max_abs")) == 0.25);
    json_decref(doc);
}
END_TEST

/* The case: on cpu every setting of the default grid but one is an emulation, and
 * the times of all overlap. The advice never names a what-if, and among settings whose
 * ranges overlap the time decides nothing: the error does, then the grid's order. */
START_TEST(what_ifs_and_noise)
{
    json_t *settings = json_array();
    json_t *none =
        timed("defaults", "off", 122.7, 110, 140, json_true(), json_true(), NULL, 2.4e-7);
    json_object_set_new(json_object_get(none, "knobs"), "emulate", json_string("none"));
    json_array_append_new(settings, none);
    json_t *bf16 =
        timed("emulate=bf16:gemm", "off", 100.0, 90, 125, json_true(), json_true(), NULL, 0.466);
    json_object_set_new(json_object_get(bf16, "knobs"), "emulate", json_string("bf16:gemm"));
    json_array_append_new(settings, bf16);
    /* a deployable setting faster by its median, within noise of defaults, less exact */
    json_array_append_new(
        settings, timed("quick", "off", 118.0, 105, 135, json_true(), json_true(), NULL, 1e-6));
    /* one whose range lies apart: slower, not within noise */
    json_array_append_new(
        settings, timed("slow", "off", 300.0, 290, 310, json_true(), json_true(), NULL, 0.0));
    json_t *doc = json_pack("{s:o}", "settings", settings);
    agt_sweep_answers(doc);
    json_t *ans = json_object_get(doc, "answers");
    ck_assert(json_is_true(json_object_get(bf16, "what_if")));
    ck_assert(json_is_false(json_object_get(none, "what_if")));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(ans, "what_ifs"), 0)),
                     "emulate=bf16:gemm");
    /* never the emulation, though its median is the least; "quick" has the least median of
     * the rest, but defaults is within its noise and closer to float64 */
    static const char *const picks[] = {"fastest", "cheapest_deterministic",
                                        "cheapest_batch_invariant",
                                        "cheapest_deterministic_and_batch_invariant"};
    for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
        json_t *p = json_object_get(ans, picks[i]);
        ck_assert_msg(strcmp(picked(ans, picks[i]), "defaults") == 0, "%s: %s", picks[i],
                      picked(ans, picks[i]));
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(p, "within_noise"), 0)),
                         "quick");
        ck_assert_int_eq(json_array_size(json_object_get(p, "within_noise")), 1);
        ck_assert(json_is_true(json_object_get(p, "within_noise_of_fastest")));
        ck_assert(json_number_value(json_object_get(p, "forward_min_ms")) == 110);
        ck_assert(json_number_value(json_object_get(p, "forward_max_ms")) == 140);
    }
    /* the slow one is named by its cost; the within-noise ones are not ranked */
    json_t *slow = json_object_get(json_array_get(settings, 3), "time");
    ck_assert(json_is_false(json_object_get(slow, "within_noise_of_fastest")));
    ck_assert(
        json_is_true(json_object_get(json_object_get(none, "time"), "within_noise_of_fastest")));
    /* the same document with the timings of another sweep (the medians swapped, the ranges
     * still overlapping): the same answer */
    json_t *t = json_object_get(json_array_get(settings, 2), "time");
    json_object_set_new(t, "forward_ms", json_real(130.0));
    json_object_set_new(json_object_get(none, "time"), "forward_ms", json_real(112.0));
    agt_sweep_answers(doc);
    ans = json_object_get(doc, "answers");
    ck_assert_str_eq(picked(ans, "cheapest_deterministic"), "defaults");
    ck_assert_str_eq(picked(ans, "fastest"), "defaults");
    json_decref(doc);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sweep_summary");
    TCase *tc = tcase_create("sweep_summary");
    tcase_add_test(tc, identical_batch);
    tcase_add_test(tc, the_gemm_moves_with_its_algorithm);
    tcase_add_test(tc, runs_not_alike);
    tcase_add_test(tc, answers);
    tcase_add_test(tc, what_ifs_and_noise);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
