/*
 * check_knobs.c: engine/core/knobs.c: the knob table of knobs.def (every knob's default
 * parses and prints as itself, one spelling per value, what older runs wrote is read, the
 * JSON records, the backends a knob is for, a session refusing a knob set on another
 * backend, a value a caller wrote that is none of the knob's, bitwise mode on the backends
 * that take it), and the reading of the kernel driver's version from
 * /proc/driver/nvidia/version (the H200 machine's "Open Kernel Module for x86_64" line was
 * read as the driver "for").
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/knobs.h"
#include "gpudiff/session.h"
#include "../../engine/core/internal.h"
#include "gpudiff/graph.h"

/* Parses text into knob name of a fresh struct and prints it back. */
static void
round_trip(const char *name, const char *text, const char *want)
{
    enum gd_knob k;
    ck_assert_msg(gd_knob_find(name, &k) == 0, "no knob %s", name);
    struct gd_knobs knobs;
    gd_knobs_init(&knobs);
    struct gd_err err = {0};
    ck_assert_msg(gd_knob_parse(&knobs, k, text, &err) == 0, "%s=%s: %s", name, text, err.msg);
    char out[1100];
    gd_knob_format(&knobs, k, out, sizeof out);
    ck_assert_msg(strcmp(out, want) == 0, "%s=%s printed as %s, not %s", name, text, out, want);
}

static void
refused(const char *name, const char *text, const char *says)
{
    enum gd_knob k;
    ck_assert(gd_knob_find(name, &k) == 0);
    struct gd_knobs knobs, before;
    gd_knobs_init(&knobs);
    before = knobs;
    struct gd_err err = {0};
    ck_assert_msg(gd_knob_parse(&knobs, k, text, &err) == GD_EINVAL, "%s=%s taken", name, text);
    ck_assert_msg(strstr(err.msg, says) != NULL, "%s=%s: \"%s\" lacks \"%s\"", name, text, err.msg,
                  says);
    ck_assert_msg(memcmp(&knobs, &before, sizeof knobs) == 0, "%s=%s: written on failure", name,
                  text);
}

START_TEST(test_table)
{
    struct gd_knobs unset;
    gd_knobs_init(&unset);
    for (int k = 0; k < GD_KNOB_COUNT; k++) {
        const struct gd_knob_info *i = gd_knob_info((enum gd_knob)k);
        ck_assert_ptr_nonnull(i);
        ck_assert(i->name[0] != '\0' && i->help[0] != '\0' && i->values[0] != '\0');
        ck_assert_msg(!gd_knob_is_set(&unset, (enum gd_knob)k), "%s is set by init", i->name);
        enum gd_knob found;
        ck_assert(gd_knob_find(i->name, &found) == 0 && found == (enum gd_knob)k);
        char flag[64];
        gd_knob_flag((enum gd_knob)k, flag, sizeof flag);
        ck_assert(strncmp(flag, "--", 2) == 0 && strchr(flag, '_') == NULL);
        ck_assert(gd_knob_find(flag + 2, &found) == 0 && found == (enum gd_knob)k);
        /* the default of an unset knob is what it prints, and parses back to itself */
        char out[1100];
        gd_knob_format(&unset, (enum gd_knob)k, out, sizeof out);
        ck_assert_str_eq(out, i->default_value);
        if (i->default_value[0] != '\0')
            round_trip(i->name, i->default_value, i->default_value);
    }
    ck_assert(gd_knob_info(GD_KNOB_COUNT) == NULL);
    enum gd_knob k;
    ck_assert_int_eq(gd_knob_find("warp_speed", &k), GD_ENOENT);
    ck_assert_int_eq(gd_knob_find("conv-algo", &k), 0);
    ck_assert_int_eq(k, GD_KNOB_CONV_ALGO);
}
END_TEST

START_TEST(test_spellings)
{
    round_trip("tf32", "on", "on");
    round_trip("emulate", "tf32", "tf32:gemm");
    round_trip("emulate", "bf16:conv+gemm", "bf16:conv+gemm");
    round_trip("emulate", "bf16:gemm+conv", "bf16:conv+gemm");
    round_trip("conv_algo", "fixed:eng70_k2=12_k18=0", "fixed:eng70_k2=12_k18=0");
    round_trip("workspace_limit", "64M", "67108864");
    round_trip("workspace_limit", "none", "none");
    round_trip("threads", "auto", "auto");
    round_trip("threads", "7", "7");
    round_trip("host_memory", "16", "16");
    round_trip("dtype", "float32", "float32");
    round_trip("capture", "layers=fc*,conv1", "layers=fc*,conv1");
    round_trip("conv_pins", "conv2=6", "conv2=6");
    round_trip("batch", "8", "8");
    round_trip("emulate", "tf32@fc2", "tf32@fc2");
    round_trip("emulate", "bf16@fc1,conv2", "bf16@fc1,conv2");
    round_trip("noise_probe", "off", "off");
    refused("tf32", "true", "takes on or off, not true");
    refused("tf32", "1", "takes on or off");
    refused("emulate", "tf32:conv,gemm", "optionally :gemm, :conv or :conv+gemm");
    refused("conv_algo", "fastest", "heuristic, autotune, deterministic or fixed:CHOICE");
    refused("conv_algo", "fixed:", "fixed:CHOICE");
    refused("threads", "0", "takes auto or 1 to 256, not 0");
    refused("threads", "257", "auto or 1 to 256");
    refused("batch", "0", "takes 1 or more, not 0");
    refused("workspace_limit", "-1", "none or a byte count");
    refused("dtype", "float64", "float32, float16 or bfloat16");
    refused("capture", "layers=", "layers=PATTERN");
    refused("host_memory", "0", "MiB");
    refused("emulate", "tf32:conv@fc2", "after a format alone");
    refused("emulate", "none@fc2", "after a format alone");
    refused("emulate", "tf32@", "node names after @");
    refused("emulate", "tf32@fc1,,fc2", "node names after @");
    refused("emulate", "tf32@fc1,", "node names after @");
    refused("noise_probe", "yes", "takes on or off, not yes");
}
END_TEST

START_TEST(test_json)
{
    struct gd_knobs k;
    gd_knobs_init(&k);
    struct gd_err err = {0};
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_TF32, "on", &err), 0);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_BATCH, "4", &err), 0);
    json_t *cuda = gd_knobs_json(&k, "cuda", NULL);
    char *text = json_dumps(cuda, JSON_COMPACT);
    ck_assert_msg(strcmp(text, "{\"tf32\":\"on\",\"conv_algo\":\"heuristic\",\"batch\":4,"
                               "\"math_mode\":\"default\",\"workspace_limit\":null,"
                               "\"conv_api\":\"graph\",\"reduced_reduction\":\"on\","
                               "\"repro\":\"off\",\"dtype\":null,\"conv_pins\":null,"
                               "\"host_memory\":1024,\"capture\":\"full\","
                               "\"noise_probe\":\"on\"}") == 0,
                  "%s", text);
    free(text);
    /* read back: the same knobs */
    struct gd_knobs back;
    ck_assert_int_eq(gd_knobs_from_json(cuda, &back, &err), 0);
    ck_assert_int_eq(back.tf32, 1);
    ck_assert_int_eq(back.batch, 4);
    json_decref(cuda);
    /* a cpu run records the cpu knobs, and as the session resolved them */
    struct gd_env env = {0};
    gd_env_set(&env, "cpu_threads", "6");
    json_t *cpu = gd_knobs_json(&k, "cpu", &env);
    ck_assert_ptr_null(json_object_get(cpu, "tf32"));
    ck_assert_str_eq(json_string_value(json_object_get(cpu, "emulate")), "none");
    ck_assert_int_eq(json_integer_value(json_object_get(cpu, "threads")), 6);
    json_decref(cpu);
    /* bitwise mode as cpu records it (it is that), and a node list's commas kept */
    gd_env_set(&env, "repro", "bitwise");
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_EMULATE, "tf32@fc1,fc2", &err), 0);
    cpu = gd_knobs_json(&k, "cpu", &env);
    ck_assert_str_eq(json_string_value(json_object_get(cpu, "repro")), "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(cpu, "emulate")), "tf32@fc1,fc2");
    ck_assert_int_eq(gd_knobs_from_json(cpu, &back, &err), 0);
    ck_assert_str_eq(back.emulate_nodes, "fc1,fc2");
    ck_assert_uint_eq(back.emulate_classes, GD_CLASS_CONV | GD_CLASS_GEMM);
    ck_assert(gd_knobs_bitwise(&back));
    json_decref(cpu);
    gd_knob_unset(&k, GD_KNOB_EMULATE);
    /* what older runs wrote: booleans, ',' between classes; other keys left alone */
    json_t *old = json_loads("{\"tf32\": true, \"emulate\": \"bf16:conv,gemm\", "
                             "\"reduced_reduction\": false, \"batch\": null, \"mine\": 3}",
                             0, NULL);
    ck_assert_int_eq(gd_knobs_from_json(old, &back, &err), 0);
    ck_assert_int_eq(back.tf32, 1);
    ck_assert_int_eq(back.reduced_reduction, 0);
    ck_assert_int_eq(back.emulate, GD_EMULATE_BF16);
    ck_assert_uint_eq(back.emulate_classes, GD_CLASS_CONV | GD_CLASS_GEMM);
    ck_assert(!gd_knob_is_set(&back, GD_KNOB_BATCH));
    json_decref(old);
    json_t *bad = json_loads("{\"tf32\": \"maybe\"}", 0, NULL);
    ck_assert_int_eq(gd_knobs_from_json(bad, &back, &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "knobs.tf32 takes on or off") != NULL, "%s", err.msg);
    json_decref(bad);
}
END_TEST

START_TEST(test_backends)
{
    ck_assert(gd_knob_applies(GD_KNOB_TF32, "cuda") && !gd_knob_applies(GD_KNOB_TF32, "cpu"));
    ck_assert(gd_knob_applies(GD_KNOB_THREADS, "cpu64") &&
              !gd_knob_applies(GD_KNOB_THREADS, "cuda"));
    ck_assert(gd_knob_applies(GD_KNOB_EMULATE, "cpu") &&
              !gd_knob_applies(GD_KNOB_EMULATE, "cpu64"));
    ck_assert(gd_knob_applies(GD_KNOB_DTYPE, "cpu64") && gd_knob_applies(GD_KNOB_BATCH, "cuda"));
    /* a session refuses a knob set for a backend the table does not list for it */
    struct gd_err err = {0};
    struct gd_graph *g = gd_graph_new("one", &err);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 1, .dim = {4}}};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, &err), 0);
    const char *in[] = {"x"}, *out[] = {"y"};
    ck_assert_int_eq(gd_graph_add_node(g, "relu", "Relu", 1, in, 1, out, 0, NULL, &err), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "y", &err), 0);
    ck_assert_int_eq(gd_graph_finalize(g, &err), 0);
    struct gd_knobs k;
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_TF32, "off", &err), 0);
    ck_assert_ptr_null(gd_session_new(g, "cpu", &k, &err));
    ck_assert_int_eq(err.code, GD_ENOTSUP);
    ck_assert_msg(strstr(err.msg, "--tf32 is for the cuda backend, not cpu") != NULL, "%s",
                  err.msg);
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_EMULATE, "tf32", &err), 0);
    ck_assert_ptr_null(gd_session_new(g, "cpu64", &k, &err));
    ck_assert_int_eq(err.code, GD_ENOTSUP);
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_THREADS, "2", &err), 0);
    struct gd_session *s = gd_session_new(g, "cpu64", &k, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    gd_session_free(s);
    /* a value a caller wrote into the struct that is none of the knob's: refused, named */
    gd_knobs_init(&k);
    snprintf(k.capture, sizeof k.capture, "sometimes");
    ck_assert_ptr_null(gd_session_new(g, "cpu", &k, &err));
    ck_assert_int_eq(err.code, GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "--capture takes full, fingerprint") != NULL, "%s", err.msg);
    gd_knobs_init(&k);
    k.noise_probe = 7;
    ck_assert_ptr_null(gd_session_new(g, "cpu", &k, &err));
    ck_assert_msg(strstr(err.msg, "noise_probe is 0, 1 or -1") != NULL, "%s", err.msg);
    gd_graph_free(g);
}
END_TEST

static void
expect(const char *line, const char *want)
{
    char out[32] = "unset";
    int rc = gd__driver_version_parse(line, out, sizeof out);
    if (want == NULL) {
        ck_assert_msg(rc == GD_ENOENT, "\"%s\" gave %s", line, out);
        return;
    }
    ck_assert_msg(rc == 0, "\"%s\": no version", line);
    ck_assert_str_eq(out, want);
}

START_TEST(test_open_kernel_module)
{
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
           "(dvs-builder@U16-I3-B03-4-3)  Thu Jan  9 21:28:04 UTC 2025\n",
           "570.86.15");
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build\n",
           "550.54.15");
}
END_TEST

START_TEST(test_kernel_module)
{
    expect("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC "
           "2023\n",
           "535.129.03");
}
END_TEST

START_TEST(test_no_version)
{
    expect("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n", NULL);
    expect("", NULL);
    /* longer than the buffer: not cut */
    char out[4];
    ck_assert_int_eq(gd__driver_version_parse("Module 570.86.15", out, sizeof out), GD_ENOENT);
}
END_TEST

/* --repro: one spelling per value, and gd_knobs_bitwise() */
START_TEST(test_repro_values)
{
    round_trip("repro", "bitwise", "bitwise");
    round_trip("repro", "off", "off");
    refused("repro", "Bitwise", "takes off or bitwise, not Bitwise");
    refused("repro", "", "off or bitwise");
    struct gd_knobs k;
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knobs_bitwise(&k), 0);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_REPRO, "off", NULL), 0);
    ck_assert_int_eq(gd_knobs_bitwise(&k), 0);
    ck_assert_int_eq(gd_knob_parse(&k, GD_KNOB_REPRO, "bitwise", NULL), 0);
    ck_assert_int_eq(gd_knobs_bitwise(&k), 1);
}
END_TEST

START_TEST(test_repro_backends)
{
    struct gd_graph *g = gd_graph_new("one relu", NULL);
    struct gd_input_decl decl = {.dtype = GD_F32, .shape = {.ndim = 1, .dim = {2}}};
    const char *in[1] = {"x"}, *out[1] = {"y"};
    ck_assert_int_eq(gd_graph_add_input(g, "x", &decl, NULL), 0);
    ck_assert_int_eq(gd_graph_add_node(g, "r", "Relu", 1, in, 1, out, 0, NULL, NULL), 0);
    ck_assert_int_eq(gd_graph_add_output(g, "y", NULL), 0);
    ck_assert_int_eq(gd_graph_finalize(g, NULL), 0);
    struct gd_knobs k;
    gd_knobs_init(&k);
    snprintf(k.repro, sizeof k.repro, "bitwise");
    struct gd_err err = {0};
    struct gd_session *s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_msg(s != NULL, "cpu refused bitwise: %s", err.msg);
    ck_assert_str_eq(gd_env_get(gd_session_env(s), "repro"), "bitwise");
    gd_session_free(s);
    s = gd_session_new(g, "cpu64", &k, &err);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, GD_ENOTSUP);
    snprintf(k.repro, sizeof k.repro, "sometimes");
    s = gd_session_new(g, "cpu", &k, &err);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, GD_EINVAL);
    gd_graph_free(g);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("knobs");
    TCase *table = tcase_create("table");
    tcase_add_test(table, test_table);
    tcase_add_test(table, test_spellings);
    tcase_add_test(table, test_json);
    tcase_add_test(table, test_backends);
    suite_add_tcase(s, table);
    TCase *tc = tcase_create("driver_version");
    tcase_add_test(tc, test_open_kernel_module);
    tcase_add_test(tc, test_kernel_module);
    tcase_add_test(tc, test_no_version);
    tcase_add_test(tc, test_repro_values);
    tcase_add_test(tc, test_repro_backends);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
