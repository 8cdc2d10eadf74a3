/*
 * check_sweep_grid.c: the grid SPEC of `gpudiff-agent sweep` (agent/sweep_grid.c): the
 * default grids and their settings' names, products and unions, duplicates, batch sizes,
 * pins, sizes, the strict setting, the knobs as run.json records them (knobs.def's one
 * spelling), the sweep's own knobs in every setting, and every kind of bad SPEC refused with
 * a message naming the part at fault.
 */
#include <string.h>

#include <check.h>

#include "agent.h"
#include "sweep.h"

static void
parse_ok(const char *spec, const char *backend, struct agt_grid *g)
{
    struct gd_err err = {0};
    memset(g, 0, sizeof *g);
    ck_assert_msg(agt_grid_parse(spec, backend, NULL, g, &err) == 0, "%s: %s", spec, err.msg);
}

static void
names_are(const struct agt_grid *g, const char *const *want, int n)
{
    ck_assert_msg(g->n == n, "%d settings, not %d (first %s)", g->n, n,
                  g->n ? g->settings[0].name : "-");
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(g->settings[i].name, want[i]);
}

START_TEST(default_cpu_grid)
{
    struct agt_grid g;
    parse_ok(agt_grid_default("cpu"), "cpu", &g);
    static const char *const want[] = {"defaults",
                                       "emulate=tf32:gemm",
                                       "emulate=tf32:conv+gemm",
                                       "emulate=bf16:gemm",
                                       "emulate=bf16:conv+gemm",
                                       "emulate=fp16:gemm",
                                       "emulate=fp16:conv+gemm"};
    names_are(&g, want, 7);
    ck_assert_int_eq(g.settings[1].knobs.emulate, GD_EMULATE_TF32);
    ck_assert_uint_eq(g.settings[1].knobs.emulate_classes, GD_CLASS_GEMM);
    ck_assert_uint_eq(g.settings[2].knobs.emulate_classes, GD_CLASS_GEMM | GD_CLASS_CONV);
    ck_assert_int_eq(g.n_batches, 0);
    ck_assert_int_eq(agt_grid_mark_strict(&g, "cpu", NULL), 0);
    ck_assert_int_eq(g.n, 7);
    ck_assert(g.settings[0].strict && !g.settings[0].added);
    ck_assert_str_eq(g.settings[0].name, "defaults");
    agt_grid_fini(&g);
}
END_TEST

START_TEST(default_cuda_grid)
{
    struct agt_grid g;
    parse_ok(agt_grid_default("cuda"), "cuda", &g);
    static const char *const want[] = {"defaults",
                                       "tf32=on",
                                       "conv_algo=autotune",
                                       "tf32=on conv_algo=autotune",
                                       "conv_algo=deterministic",
                                       "tf32=on conv_algo=deterministic",
                                       "math_mode=pedantic",
                                       "workspace_limit=0",
                                       "repro=bitwise"};
    names_are(&g, want, 9);
    ck_assert_str_eq(g.settings[8].knobs.repro, "bitwise");
    ck_assert_str_eq(g.settings[8].knobs.conv_algo, "");
    ck_assert_int_eq(g.settings[8].knobs.tf32, -1);
    ck_assert_str_eq(g.settings[6].knobs.math_mode, "pedantic");
    ck_assert_int_eq(g.settings[7].knobs.workspace_limit, 0);
    ck_assert_int_eq(g.settings[0].knobs.workspace_limit, -1);
    /* the strict setting is in the grid: moved first, not added */
    ck_assert_int_eq(agt_grid_mark_strict(&g, "cuda", NULL), 0);
    ck_assert_int_eq(g.n, 9);
    ck_assert_str_eq(g.settings[0].name, "conv_algo=deterministic");
    ck_assert(g.settings[0].strict && !g.settings[0].added);
    ck_assert_str_eq(g.settings[1].name, "defaults");
    for (int i = 1; i < g.n; i++)
        ck_assert(!g.settings[i].strict);
    agt_grid_fini(&g);
}
END_TEST

START_TEST(products_unions_and_duplicates)
{
    struct agt_grid g;
    parse_ok("conv_algo=heuristic,autotune;tf32=on,off", "cuda", &g);
    static const char *const prod[] = {"tf32=on", "defaults", "tf32=on conv_algo=autotune",
                                       "conv_algo=autotune"};
    names_are(&g, prod, 4);
    agt_grid_fini(&g);
    /* '-' is read as '_'; an axis left out, or at its default, names the same setting */
    parse_ok(" tf32=on | tf32 = on , off | conv-algo=heuristic ", "cuda", &g);
    static const char *const uni[] = {"tf32=on", "defaults"};
    names_are(&g, uni, 2);
    /* the strict setting is not in it: added first */
    ck_assert_int_eq(agt_grid_mark_strict(&g, "cuda", NULL), 0);
    ck_assert_int_eq(g.n, 3);
    ck_assert(g.settings[0].strict && g.settings[0].added);
    ck_assert_str_eq(g.settings[0].knobs.conv_algo, "deterministic");
    ck_assert(!gd_knob_is_set(&g.settings[0].knobs, GD_KNOB_TF32));
    agt_grid_fini(&g);
    parse_ok("threads=1,2,auto", "cpu64", &g);
    static const char *const thr[] = {"threads=1", "threads=2", "defaults"};
    names_are(&g, thr, 3);
    agt_grid_fini(&g);
}
END_TEST

START_TEST(batch_sizes)
{
    struct agt_grid g;
    parse_ok("emulate=none,bf16:conv;batch=1,8,all,8", "cpu", &g);
    static const char *const want[] = {"defaults", "emulate=bf16:conv"};
    names_are(&g, want, 2);
    ck_assert_int_eq(g.n_batches, 3);
    ck_assert_int_eq(g.batches[0], 1);
    ck_assert_int_eq(g.batches[1], 8);
    ck_assert_int_eq(g.batches[2], 0);
    for (int i = 0; i < g.n; i++)
        ck_assert_int_eq(g.settings[i].knobs.batch, 0);
    agt_grid_fini(&g);
    /* only batch sizes: the default settings at them */
    parse_ok("batch=2", "cpu", &g);
    ck_assert_int_eq(g.n, 7);
    ck_assert_int_eq(g.n_batches, 1);
    ck_assert_int_eq(g.batches[0], 2);
    agt_grid_fini(&g);
}
END_TEST

START_TEST(pins_fixed_and_sizes)
{
    struct agt_grid g;
    parse_ok("conv_algo=conv2@6,layer1.0.a.conv@1,fixed:3,each;workspace_limit=64M,none,1024",
             "cuda", &g);
    ck_assert_int_eq(g.n, 12);
    ck_assert_str_eq(g.settings[0].name, "conv_algo=conv2@6 workspace_limit=67108864");
    ck_assert_str_eq(g.settings[0].knobs.conv_pins, "conv2=6");
    ck_assert_str_eq(g.settings[0].knobs.conv_algo, "heuristic");
    ck_assert_str_eq(g.settings[1].name, "conv_algo=conv2@6");
    ck_assert_int_eq(g.settings[1].knobs.workspace_limit, -1);
    ck_assert_int_eq(g.settings[2].knobs.workspace_limit, 1024);
    ck_assert_str_eq(g.settings[3].knobs.conv_pins, "layer1.0.a.conv=1");
    ck_assert_str_eq(g.settings[6].knobs.conv_algo, "fixed:3");
    ck_assert_str_eq(g.settings[6].name, "conv_algo=fixed:3 workspace_limit=67108864");
    ck_assert(g.settings[9].expand_each && !g.settings[6].expand_each);
    ck_assert_str_eq(g.settings[9].name, "conv_algo=each workspace_limit=67108864");
    agt_grid_fini(&g);
}
END_TEST

START_TEST(knobs_as_recorded)
{
    struct agt_grid g;
    parse_ok("emulate=tf32:conv+gemm;threads=3", "cpu", &g);
    json_t *k = gd_knobs_json(&g.settings[0].knobs, "cpu", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(k, "emulate")), "tf32:conv+gemm");
    ck_assert_int_eq(json_integer_value(json_object_get(k, "threads")), 3);
    ck_assert(json_is_null(json_object_get(k, "batch")));
    ck_assert_ptr_null(json_object_get(k, "tf32"));
    json_decref(k);
    agt_grid_fini(&g);
    parse_ok("conv_algo=conv1@2;tf32=on", "cuda", &g);
    k = gd_knobs_json(&g.settings[0].knobs, "cuda", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(k, "tf32")), "on");
    ck_assert_str_eq(json_string_value(json_object_get(k, "conv_algo")), "heuristic");
    ck_assert_str_eq(json_string_value(json_object_get(k, "conv_pins")), "conv1=2");
    ck_assert_str_eq(json_string_value(json_object_get(k, "math_mode")), "default");
    ck_assert(json_is_null(json_object_get(k, "workspace_limit")));
    json_decref(k);
    agt_grid_fini(&g);
    /* the sweep's own knobs (--dtype) are in every setting, the strict one too */
    struct gd_knobs base;
    gd_knobs_init(&base);
    ck_assert_int_eq(gd_knob_parse(&base, GD_KNOB_DTYPE, "float16", NULL), 0);
    struct gd_err err = {0};
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(agt_grid_parse("emulate=none,bf16", "cpu", &base, &g, &err), 0);
    ck_assert_int_eq(agt_grid_mark_strict(&g, "cpu", &base), 0);
    for (int i = 0; i < g.n; i++)
        ck_assert_str_eq(g.settings[i].knobs.dtype, "float16");
    agt_grid_fini(&g);
}
END_TEST

/* The repro axis: bitwise mode is one setting whatever the other axes' defaults (the cuDNN
 * knobs it has no use for unset), recorded in run.json's knobs; off is the default mode;
 * other values are refused, and so is the axis where knobs.def has no repro (cpu64). */
START_TEST(repro_axis)
{
    struct agt_grid g = {0};
    parse_ok("conv_algo=autotune;tf32=on;repro=off,bitwise", "cuda", &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.settings[0].name, "tf32=on conv_algo=autotune");
    ck_assert(!gd_knobs_bitwise(&g.settings[0].knobs));
    ck_assert_str_eq(g.settings[1].name, "repro=bitwise");
    ck_assert_str_eq(g.settings[1].knobs.conv_algo, "");
    ck_assert_int_eq(g.settings[1].knobs.tf32, -1);
    json_t *k = gd_knobs_json(&g.settings[1].knobs, "cuda", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(k, "repro")), "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(k, "conv_algo")), "heuristic");
    json_decref(k);
    agt_grid_fini(&g);
    struct gd_err err = {0};
    ck_assert_int_ne(agt_grid_parse("repro=sometimes", "cuda", NULL, &g, &err), 0);
    ck_assert_msg(strstr(err.msg, "off or bitwise") != NULL, "%s", err.msg);
    agt_grid_fini(&g);
    ck_assert_int_ne(agt_grid_parse("repro=bitwise", "cpu64", NULL, &g, &err), 0);
    ck_assert_msg(strstr(err.msg, "not for the cpu64 backend") != NULL, "%s", err.msg);
    agt_grid_fini(&g);
}
END_TEST

/* Engine configs as fixed choices and pins, the conv API axis, and how both are named. */
START_TEST(engine_configs_and_api)
{
    struct agt_grid g = {0};
    parse_ok("conv_algo=fixed:eng34_k2=1_k13=0,conv1@eng0;conv_api=graph,legacy", "cuda", &g);
    ck_assert_int_eq(g.n, 4);
    ck_assert_str_eq(g.settings[0].knobs.conv_algo, "fixed:eng34_k2=1_k13=0");
    ck_assert_str_eq(g.settings[0].knobs.conv_api, "graph");
    ck_assert_str_eq(g.settings[0].name, "conv_algo=fixed:eng34_k2=1_k13=0");
    ck_assert_str_eq(g.settings[1].knobs.conv_api, "legacy");
    ck_assert_str_eq(g.settings[1].name, "conv_algo=fixed:eng34_k2=1_k13=0 conv_api=legacy");
    ck_assert_str_eq(g.settings[2].knobs.conv_pins, "conv1=eng0");
    ck_assert_str_eq(g.settings[2].name, "conv_algo=conv1@eng0");
    json_t *k = gd_knobs_json(&g.settings[1].knobs, "cuda", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(k, "conv_api")), "legacy");
    json_decref(k);
    agt_grid_fini(&g);
    /* a pin's own '=' stays in the name; only the node's becomes '@' */
    parse_ok("conv_algo=c2@eng7_k2=3", "cuda", &g);
    ck_assert_str_eq(g.settings[0].knobs.conv_pins, "c2=eng7_k2=3");
    ck_assert_str_eq(g.settings[0].name, "conv_algo=c2@eng7_k2=3");
    k = gd_knobs_json(&g.settings[0].knobs, "cuda", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(k, "conv_api")), "graph");
    json_decref(k);
    agt_grid_fini(&g);
}
END_TEST

START_TEST(bad_specs)
{
    static const struct {
        const char *spec, *backend, *says;
    } cases[] = {
        {"nope=1", "cpu", "unknown axis nope (the cpu backend's: emulate, batch, repro, threads)"},
        {"conv=heuristic", "cuda", "unknown axis conv (the cuda backend's: tf32, conv_algo,"},
        {"tf32=on", "cpu", "not for the cpu backend"},
        {"emulate=tf32", "cuda", "not for the cuda backend"},
        {"emulate=tf32", "cpu64", "not for the cpu64 backend"},
        {"tf32=maybe", "cuda", "tf32 takes on or off, not maybe"},
        {"conv_algo=fastest", "cuda",
         "conv_algo takes heuristic, autotune, deterministic, "
         "fixed:CHOICE, each or NODE@CHOICE, not fastest"},
        {"conv_algo=fixed:", "cuda", "fixed:: fixed: takes an algorithm id"},
        {"conv_algo=@3", "cuda", "@3: NODE@CHOICE takes"},
        {"conv_algo=a@b", "cuda", "a@b: NODE@CHOICE takes"},
        {"conv_algo=fixed:engx", "cuda", "fixed:engx: fixed: takes"},
        {"conv_algo=a@eng", "cuda", "a@eng: NODE@CHOICE takes"},
        {"conv_api=new", "cuda", "conv_api takes graph or legacy, not new"},
        {"conv_api=graph", "cpu", "axis conv_api is not for the cpu backend"},
        {"emulate=tf33", "cpu", "emulate takes none, tf32, bf16 or fp16"},
        {"emulate=tf32:gemv", "cpu", "not tf32:gemv"},
        {"emulate=tf32:conv,gemm", "cpu", "not gemm"},
        {"threads=0", "cpu", "threads takes auto or 1 to 256, not 0"},
        {"threads=257", "cpu", "not 257"},
        {"workspace_limit=12Q", "cuda", "not 12Q"},
        {"workspace_limit=-1", "cuda", "not -1"},
        {"dtype=float16", "cpu", "dtype is not an axis of the grid"},
        {"conv_pins=c=1", "cuda", "pins are conv_algo=NODE@CHOICE"},
        {"capture=full", "cpu", "capture is not an axis"},
        {"tf32", "cuda", "tf32 is not KEY=VALUES"},
        {"tf32=on,", "cuda", "an empty value"},
        {"tf32=on||tf32=off", "cuda", "an empty group"},
        {"tf32=on;tf32=off", "cuda", "axis tf32 twice"},
        {"batch=1|batch=2", "cpu", "batch is given twice"},
        {"batch=0", "cpu", "batch=0: a batch size is a positive integer"},
        {"batch=x", "cpu", "batch=x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct agt_grid g = {0};
        struct gd_err err = {0};
        int rc = agt_grid_parse(cases[i].spec, cases[i].backend, NULL, &g, &err);
        ck_assert_msg(rc == GD_EINVAL, "%s on %s: accepted (%d)", cases[i].spec, cases[i].backend,
                      rc);
        ck_assert_msg(strstr(err.msg, cases[i].says) != NULL &&
                          strncmp(err.msg, "--grid: ", 8) == 0,
                      "%s: the message is \"%s\"", cases[i].spec, err.msg);
        agt_grid_fini(&g);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sweep_grid");
    TCase *tc = tcase_create("sweep_grid");
    tcase_add_test(tc, default_cpu_grid);
    tcase_add_test(tc, default_cuda_grid);
    tcase_add_test(tc, repro_axis);
    tcase_add_test(tc, products_unions_and_duplicates);
    tcase_add_test(tc, batch_sizes);
    tcase_add_test(tc, pins_fixed_and_sizes);
    tcase_add_test(tc, knobs_as_recorded);
    tcase_add_test(tc, engine_configs_and_api);
    tcase_add_test(tc, bad_specs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
