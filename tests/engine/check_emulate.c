/* check_emulate.c: the --emulate knob (engine/cpu/emulate.c, engine/core/knobs.c), for
 * classes of ops and for named nodes (FORMAT@NODES). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gpudiff/session.h"
#include "op_fixture.h"

/* ---- gd_emulate_parse ---- */

struct parse_case {
    const char *text;
    int code;
    enum gd_emulate emulate;
    unsigned classes;
};

/* clang-format off */
static const struct parse_case parse_cases[] = {
    {"tf32", 0, GD_EMULATE_TF32, GD_CLASS_GEMM},
    {"bf16", 0, GD_EMULATE_BF16, GD_CLASS_GEMM},
    {"fp16", 0, GD_EMULATE_FP16, GD_CLASS_GEMM},
    {"none", 0, GD_EMULATE_NONE, GD_CLASS_GEMM},
    {"bf16:conv", 0, GD_EMULATE_BF16, GD_CLASS_CONV},
    {"tf32:gemm", 0, GD_EMULATE_TF32, GD_CLASS_GEMM},
    {"tf32:conv+gemm", 0, GD_EMULATE_TF32, GD_CLASS_GEMM | GD_CLASS_CONV},
    {"tf32:gemm+conv", 0, GD_EMULATE_TF32, GD_CLASS_GEMM | GD_CLASS_CONV},
    /* one spelling: the classes are joined by '+' (older run.json files' ',' is read by
     * gd_knobs_from_json, not here) */
    {"tf32:conv,gemm", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"tf32:conv+", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"fp8", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"TF32", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"tf32:", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"tf32:pool", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"none:conv", GD_EINVAL, GD_EMULATE_NONE, 0},
    {"", GD_EINVAL, GD_EMULATE_NONE, 0},
};
/* clang-format on */

START_TEST(test_parse)
{
    const struct parse_case *p = &parse_cases[_i];
    /* what a failed parse must leave untouched */
    enum gd_emulate e = GD_EMULATE_FP16;
    unsigned classes = 0xdead;
    struct gd_err err = {0};
    int rc = gd_emulate_parse(p->text, &e, &classes, &err);
    ck_assert_msg(rc == p->code, "\"%s\": got %s (%s), want %s", p->text, gd_err_name(rc), err.msg,
                  gd_err_name(p->code));
    if (rc == 0)
        ck_assert_msg(e == p->emulate && classes == p->classes,
                      "\"%s\": got %s classes %u, want %s classes %u", p->text, gd_emulate_name(e),
                      classes, gd_emulate_name(p->emulate), p->classes);
    else
        ck_assert_msg(e == GD_EMULATE_FP16 && classes == 0xdead,
                      "\"%s\": outputs written on failure", p->text);
}
END_TEST

/* ---- emulated Gemm and Conv on cpu ---- */

/*
 * tests/fixtures/ops/emulate/<op>_<format>/: out0.npy is float32, made in numpy by rounding
 * A and B (or X and W) to the format by bit manipulation (round to nearest even) and then
 * accumulating in float32 in the cpu backend's documented order (k ascending; channel, row,
 * column for Conv, the bias last). Products of two TF32, BF16 or FP16 values are exact in
 * float32, so the only roundings are those of the additions, and the result is exactly
 * determined: the engine must match bit for bit. "none" checks the order itself.
 */
static void
run_emulated(const char *case_name, const char *knob, const char *compare_with)
{
    struct of_case c;
    ck_assert_msg(of_case_load("emulate", case_name, &c) == 0, "cannot load %s", case_name);
    struct of_case ref;
    ck_assert_msg(of_case_load("emulate", compare_with, &ref) == 0, "cannot load %s", compare_with);
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    struct gd_err err = {0};
    if (knob != NULL)
        ck_assert_msg(gd_emulate_parse(knob, &knobs.emulate, &knobs.emulate_classes, &err) == 0,
                      "%s: %s", knob, err.msg);
    struct gd_tensor *out[1] = {NULL};
    int rc = of_case_run(&c, "cpu", &knobs, out, &err);
    ck_assert_msg(rc == 0, "%s with --emulate %s: %s", case_name, knob ? knob : "none", err.msg);
    const struct gd_tensor *want = ref.want[0];
    ck_assert_msg(out[0]->dtype == GD_F32 && gd_tensor_numel(out[0]) == gd_tensor_numel(want),
                  "%s: output is %s with %lld elements", case_name, gd_dtype_name(out[0]->dtype),
                  (long long)gd_tensor_numel(out[0]));
    const float *g = out[0]->data, *w = want->data;
    int64_t bad = 0;
    for (int64_t i = 0; i < gd_tensor_numel(want); i++) {
        if (memcmp(&g[i], &w[i], sizeof g[i]) == 0)
            continue;
        if (bad++ < 8)
            fprintf(stderr,
                    "%s --emulate %s: out0[%lld]: got %.9g, want %.9g (%s), diff %.3g, "
                    "bound 0 (bitwise)\n",
                    case_name, knob ? knob : "none", (long long)i, (double)g[i], (double)w[i],
                    compare_with, (double)g[i] - (double)w[i]);
    }
    gd_tensor_free(out[0]);
    of_case_fini(&c);
    of_case_fini(&ref);
    ck_assert_msg(bad == 0, "%s --emulate %s: %lld elements differ from %s", case_name,
                  knob ? knob : "none", (long long)bad, compare_with);
}

struct emu_case {
    const char *fixture; /* the inputs */
    const char *knob;    /* --emulate text, NULL for none */
    const char *expect;  /* the fixture whose output it must equal */
};

/* clang-format off */
static const struct emu_case emu_cases[] = {
    {"gemm_none", NULL, "gemm_none"},
    {"gemm_tf32", "tf32", "gemm_tf32"},
    {"gemm_bf16", "bf16", "gemm_bf16"},
    {"gemm_fp16", "fp16", "gemm_fp16"},
    {"gemm_bf16", "bf16:gemm+conv", "gemm_bf16"},
    /* a class the op is not in leaves it alone */
    {"gemm_tf32", "tf32:conv", "gemm_none"},
    {"conv_none", NULL, "conv_none"},
    {"conv_tf32", "tf32:conv", "conv_tf32"},
    {"conv_bf16", "bf16:conv", "conv_bf16"},
    {"conv_fp16", "fp16:conv", "conv_fp16"},
    {"conv_bf16", "bf16", "conv_none"},
};
/* clang-format on */

#define N_EMU ((int)(sizeof emu_cases / sizeof emu_cases[0]))

START_TEST(test_emulated)
{
    run_emulated(emu_cases[_i].fixture, emu_cases[_i].knob, emu_cases[_i].expect);
}
END_TEST

/* The emulated results are not the plain float32 ones: the knob does something. */
START_TEST(test_emulation_changes_results)
{
    static const char *const pairs[][2] = {{"gemm_none", "gemm_tf32"},
                                           {"gemm_none", "gemm_bf16"},
                                           {"conv_none", "conv_tf32"},
                                           {"conv_none", "conv_bf16"}};
    for (int p = 0; p < 4; p++) {
        struct of_case a, b;
        ck_assert(of_case_load("emulate", pairs[p][0], &a) == 0);
        ck_assert(of_case_load("emulate", pairs[p][1], &b) == 0);
        int differ = memcmp(a.want[0]->data, b.want[0]->data, gd_tensor_nbytes(a.want[0])) != 0;
        of_case_fini(&a);
        of_case_fini(&b);
        ck_assert_msg(differ, "%s and %s have the same expected output", pairs[p][0], pairs[p][1]);
    }
}
END_TEST

/* cpu64 is the reference: it refuses any emulation with GD_ENOTSUP. */
START_TEST(test_cpu64_refuses)
{
    static const char *const knobs_text[] = {"tf32", "bf16:conv", "fp16:gemm+conv"};
    struct of_case c;
    ck_assert(of_case_load("emulate", "gemm_none", &c) == 0);
    for (int i = 0; i < 3; i++) {
        struct gd_knobs knobs;
        gd_knobs_init(&knobs);
        struct gd_err err = {0};
        ck_assert(gd_emulate_parse(knobs_text[i], &knobs.emulate, &knobs.emulate_classes, &err) ==
                  0);
        struct gd_tensor *out[1] = {NULL};
        int rc = of_case_run(&c, "cpu64", &knobs, out, &err);
        ck_assert_msg(rc == GD_ENOTSUP, "cpu64 --emulate %s: got %s (%s), want ENOTSUP",
                      knobs_text[i], gd_err_name(rc), err.msg);
        ck_assert_ptr_null(out[0]);
    }
    of_case_fini(&c);
}
END_TEST


/* ---- gd_knob_parse of emulate: FORMAT[:CLASSES] or FORMAT@NODES ---- */

struct spec_case {
    const char *text;
    int code;
    const char *nodes; /* knobs.emulate_nodes after it */
    const char *back;  /* gd_knob_format() of the result */
};

/* clang-format off */
static const struct spec_case spec_cases[] = {
    {"tf32@fc2", 0, "fc2", "tf32@fc2"},
    {"bf16@fc1,fc2", 0, "fc1,fc2", "bf16@fc1,fc2"},
    {"fp16:conv+gemm", 0, "", "fp16:conv+gemm"},
    {"fp16:conv,gemm", GD_EINVAL, NULL, NULL},
    {"tf32", 0, "", "tf32:gemm"},
    {"none", 0, "", "none"},
    {"none@fc1", GD_EINVAL, NULL, NULL},
    {"tf32:conv@fc1", GD_EINVAL, NULL, NULL},
    {"tf32@", GD_EINVAL, NULL, NULL},
    {"tf32@a,,b", GD_EINVAL, NULL, NULL},
    {"tf32@a,", GD_EINVAL, NULL, NULL},
    {"fp8@a", GD_EINVAL, NULL, NULL},
};
/* clang-format on */

START_TEST(test_spec)
{
    const struct spec_case *p = &spec_cases[_i];
    struct gd_knobs k;
    gd_knobs_init(&k);
    k.emulate = GD_EMULATE_FP16; /* what a failed parse must leave */
    struct gd_err err = {0};
    int rc = gd_knob_parse(&k, GD_KNOB_EMULATE, p->text, &err);
    ck_assert_msg(rc == p->code, "\"%s\": got %s (%s)", p->text, gd_err_name(rc), err.msg);
    if (rc != 0) {
        ck_assert_msg(k.emulate == GD_EMULATE_FP16 && k.emulate_nodes[0] == '\0',
                      "\"%s\": knobs written on failure", p->text);
        return;
    }
    ck_assert_str_eq(k.emulate_nodes, p->nodes);
    char back[320];
    gd_knob_format(&k, GD_KNOB_EMULATE, back, sizeof back);
    ck_assert_str_eq(back, p->back);
    /* what the text reads back as is the same setting */
    struct gd_knobs k2;
    gd_knobs_init(&k2);
    ck_assert_int_eq(gd_knob_parse(&k2, GD_KNOB_EMULATE, back, &err), 0);
    ck_assert(k2.emulate == k.emulate && k2.emulate_classes == k.emulate_classes);
    ck_assert_str_eq(k2.emulate_nodes, k.emulate_nodes);
}
END_TEST

START_TEST(test_emulates_names)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_EMULATE, "tf32@fc2,fc10", NULL), 0);
    ck_assert(gd_knobs_emulates(&k, "fc2", GD_CLASS_GEMM));
    ck_assert(gd_knobs_emulates(&k, "fc10", GD_CLASS_CONV));
    ck_assert(!gd_knobs_emulates(&k, "fc1", GD_CLASS_GEMM)); /* not a prefix match */
    ck_assert(!gd_knobs_emulates(&k, "fc", GD_CLASS_GEMM));
    ck_assert(!gd_knobs_emulates(&k, NULL, GD_CLASS_GEMM));
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_EMULATE, "tf32", NULL), 0);
    ck_assert(gd_knobs_emulates(&k, "anything", GD_CLASS_GEMM));
    ck_assert(!gd_knobs_emulates(&k, "anything", GD_CLASS_CONV));
}
END_TEST

static struct gd_tensor *
filled(int64_t rows, int64_t cols, uint64_t seed)
{
    int64_t shape[2] = {rows, cols};
    struct gd_tensor *t = gd_tensor_new(GD_F32, 2, shape, NULL);
    ck_assert_ptr_nonnull(t);
    float *v = t->data;
    for (int64_t i = 0; i < rows * cols; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(seed >> 11) * 0x1p-53 - 0.5) * 0.3f;
    }
    return t;
}

/* x -> fc1 (Gemm) -> r (Relu) -> fc2 (Gemm) */
static struct gd_graph *
two_gemms(void)
{
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("two-gemms", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 2, .dim = {4, 64}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "W1", filled(64, 64, 3), &err), 0);
    ck_assert_int_eq(gd_graph_add_constant(g, "W2", filled(64, 8, 5), &err), 0);
    const char *i1[] = {"x", "W1"}, *o1[] = {"fc1"}, *i2[] = {"fc1"}, *o2[] = {"r"};
    const char *i3[] = {"r", "W2"}, *o3[] = {"fc2"};
    ck_assert_int_eq(gd_graph_add_node(g, "fc1", "Gemm", 2, i1, 1, o1, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_node(g, "r", "Relu", 1, i2, 1, o2, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_node(g, "fc2", "Gemm", 2, i3, 1, o3, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "fc2", &err), 0);
    ck_assert_msg(gd_graph_finalize(g, &err) == 0, "%s", err.msg);
    return g;
}

struct outs {
    struct gd_tensor *t[3];
};

static int
keep(void *user, const struct gd_layer *layer, struct gd_err *err)
{
    struct outs *o = user;
    if (layer->index >= 0 && layer->index < 3)
        o->t[layer->index] = gd_tensor_dup(layer->value, err);
    return 0;
}

static int
run_spec(struct gd_graph *g, const char *spec, struct outs *o, struct gd_err *err)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_EMULATE, spec, NULL), 0);
    struct gd_session *s = gd_session_new(g, "cpu", &k, err);
    if (s == NULL)
        return err->code;
    struct gd_tensor *x = filled(4, 64, 7);
    const struct gd_tensor *in[1] = {x};
    memset(o, 0, sizeof *o);
    int rc = gd_session_run(s, 1, in, keep, o, err);
    gd_session_free(s);
    gd_tensor_free(x);
    return rc;
}

static int
same(const struct gd_tensor *a, const struct gd_tensor *b)
{
    return memcmp(a->data, b->data, gd_tensor_nbytes(a)) == 0;
}

/* tf32@fc2 rounds fc2's operands only: fc1 (and so r) is the plain run's, fc2 is not; a
 * name that is no node, or not a GEMM or convolution, is refused. */
START_TEST(test_one_node)
{
    struct gd_graph *g = two_gemms();
    struct outs plain, one, both;
    struct gd_err err = {0};
    ck_assert_int_eq(run_spec(g, "none", &plain, &err), 0);
    ck_assert_int_eq(run_spec(g, "tf32@fc2", &one, &err), 0);
    ck_assert_int_eq(run_spec(g, "tf32", &both, &err), 0);
    ck_assert_msg(same(plain.t[0], one.t[0]) && same(plain.t[1], one.t[1]),
                  "fc1 or r moved under tf32@fc2");
    ck_assert_msg(!same(plain.t[2], one.t[2]), "fc2 did not move under tf32@fc2");
    ck_assert_msg(!same(plain.t[0], both.t[0]), "fc1 did not move under tf32");
    for (int i = 0; i < 3; i++) {
        gd_tensor_free(plain.t[i]);
        gd_tensor_free(one.t[i]);
        gd_tensor_free(both.t[i]);
    }
    ck_assert_int_eq(run_spec(g, "tf32@r", &one, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "not a GEMM or convolution") != NULL, "%s", err.msg);
    ck_assert_int_eq(run_spec(g, "tf32@fc3", &one, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "no node") != NULL, "%s", err.msg);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("emulate");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, test_parse, 0, (int)(sizeof parse_cases / sizeof parse_cases[0]));
    tcase_add_loop_test(tc, test_spec, 0, (int)(sizeof spec_cases / sizeof spec_cases[0]));
    tcase_add_test(tc, test_emulates_names);
    suite_add_tcase(s, tc);
    tc = tcase_create("emulate");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_emulated, 0, N_EMU);
    tcase_add_test(tc, test_emulation_changes_results);
    tcase_add_test(tc, test_cpu64_refuses);
    tcase_add_test(tc, test_one_node);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
