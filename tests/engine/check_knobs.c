/*
 * check_knobs.c: tests of engine/core/knobs.c's reading of the kernel driver's version from
 * /proc/driver/nvidia/version (the H200 machine's "Open Kernel Module for x86_64" line was
 * read as the driver "for").
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/core/internal.h"

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

int
main(void)
{
    Suite *s = suite_create("knobs");
    TCase *tc = tcase_create("driver_version");
    tcase_add_test(tc, test_open_kernel_module);
    tcase_add_test(tc, test_kernel_module);
    tcase_add_test(tc, test_no_version);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
