/*
 * check_knobs.c: tests of engine/core/knobs.c's reading of the kernel driver's version from
 * /proc/driver/nvidia/version (the H200 machine's "Open Kernel Module for x86_64" line was
 * read as the driver "for"), and of the --repro values.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/core/internal.h"
#include "gpudiff/graph.h"
#include "gpudiff/run.h"

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

/* --repro: one spelling per value, and the backends that refuse or take it */
START_TEST(test_repro_values)
{
    struct gd_err err = {0};
    ck_assert_int_eq(gd_repro_check("bitwise", &err), 0);
    ck_assert_int_eq(gd_repro_check("off", &err), 0);
    ck_assert_int_eq(gd_repro_check("Bitwise", &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "off or bitwise") != NULL, "%s", err.msg);
    ck_assert_int_eq(gd_repro_check("", NULL), GD_EINVAL);
    struct gd_knobs k;
    gd_knobs_init(&k);
    ck_assert_int_eq(gd_knobs_bitwise(&k), 0);
    snprintf(k.repro, sizeof k.repro, "bitwise");
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
