/*
 * check_conv_config.c: tests of engine/core/conv_config.c, the text of a fixed convolution
 * choice: engine configs parse into the engine and its knobs, sorted by knob type, and
 * print back as one text; malformed ones and repeated knobs are refused with a message; a
 * legacy id is accepted only under --conv-api legacy and an engine config only under graph.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/core/conv_config.h"
#include "../../engine/core/internal.h"

static void
round_trip(const char *text, const char *canonical)
{
    struct gd__conv_config c;
    struct gd_err err = {0};
    char buf[96];
    ck_assert_msg(gd__conv_config_parse(text, strlen(text), &c, &err) == 0, "%s: %s", text,
                  err.msg);
    int n = gd__conv_config_format(&c, buf, sizeof buf);
    ck_assert_int_eq(n, (int)strlen(canonical));
    ck_assert_str_eq(buf, canonical);
}

START_TEST(test_parse)
{
    struct gd__conv_config c;
    struct gd_err err = {0};
    const char *t = "eng34_k13=0_k2=1_k14=-3";
    ck_assert_int_eq(gd__conv_config_parse(t, strlen(t), &c, &err), 0);
    ck_assert_int_eq(c.engine, 34);
    ck_assert_int_eq(c.n_knobs, 3);
    ck_assert_int_eq(c.knob_type[0], 2);
    ck_assert_int_eq(c.knob_value[0], 1);
    ck_assert_int_eq(c.knob_type[1], 13);
    ck_assert_int_eq(c.knob_value[1], 0);
    ck_assert_int_eq(c.knob_type[2], 14);
    ck_assert_int_eq(c.knob_value[2], -3);
    round_trip("eng0", "eng0");
    round_trip("eng34_k13=0_k2=1", "eng34_k2=1_k13=0");
    round_trip("eng7_k24=118_k3=0_k2=11", "eng7_k2=11_k3=0_k24=118");
    /* only len bytes are read: a pin's text is followed by the next pin */
    ck_assert_int_eq(gd__conv_config_parse("eng5_k2=1,conv2=eng1", 9, &c, &err), 0);
    ck_assert_int_eq(c.engine, 5);
    ck_assert_int_eq(c.n_knobs, 1);
}
END_TEST

START_TEST(test_format_cut)
{
    struct gd__conv_config c;
    struct gd_err err = {0};
    char small[8];
    ck_assert_int_eq(gd__conv_config_parse("eng12_k2=3", 10, &c, &err), 0);
    /* the length it needs, the text cut and terminated */
    ck_assert_int_eq(gd__conv_config_format(&c, small, sizeof small), 10);
    ck_assert_str_eq(small, "eng12_k");
}
END_TEST

static void
refused(const char *text, const char *says)
{
    struct gd__conv_config c = {.engine = 99};
    struct gd_err err = {0};
    ck_assert_msg(gd__conv_config_parse(text, strlen(text), &c, &err) == GD_EINVAL, "%s taken",
                  text);
    ck_assert_msg(strstr(err.msg, says) != NULL, "%s: %s", text, err.msg);
    ck_assert_int_eq(c.engine, 99); /* nothing written */
}

START_TEST(test_refused)
{
    refused("", "not an engine config");
    refused("3", "not an engine config");
    refused("eng", "not an engine config");
    refused("engine3", "not an engine config");
    refused("eng-1", "not an engine config");
    refused("eng3_", "not a knob");
    refused("eng3_k2", "not a knob");
    refused("eng3_k2=", "not a knob");
    refused("eng3_k=1", "not a knob");
    refused("eng3_kx=1", "not a knob");
    refused("eng3_k2=1x", "not a knob");
    refused("eng3 k2=1", "not a knob");
    refused("eng3_k2=1_k2=0", "knob 2 twice");
    refused("eng99999999999999999999", "not an engine config");
}
END_TEST

START_TEST(test_choice_per_api)
{
    struct gd_err err = {0};
    int id = -1;
    ck_assert(gd__conv_legacy_id("7", 1, &id) && id == 7);
    ck_assert(!gd__conv_legacy_id("7a", 2, &id));
    ck_assert(!gd__conv_legacy_id("1001", 4, &id));
    ck_assert(!gd__conv_legacy_id("", 0, &id));
    ck_assert_int_eq(gd__conv_choice_check("legacy", "3", 1, "fixed:", &err), 0);
    ck_assert_int_eq(gd__conv_choice_check("graph", "eng3_k2=1", 9, "fixed:", &err), 0);
    ck_assert_int_eq(gd__conv_choice_check("graph", "3", 1, "fixed:", &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "fixed:3") && strstr(err.msg, "--conv-api legacy"), "%s",
                  err.msg);
    ck_assert_int_eq(gd__conv_choice_check("legacy", "eng3", 4, "pin c=", &err), GD_EINVAL);
    ck_assert_msg(strstr(err.msg, "pin c=eng3") && strstr(err.msg, "--conv-api graph"), "%s",
                  err.msg);
    ck_assert_int_eq(gd__conv_choice_check("graph", "eng3_k2", 7, "fixed:", &err), GD_EINVAL);
    ck_assert_msg(strncmp(err.msg, "fixed:", 6) == 0, "%s", err.msg);
    /* no error struct: the code alone */
    ck_assert_int_eq(gd__conv_choice_check("graph", "x", 1, "fixed:", NULL), GD_EINVAL);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("conv_config");
    TCase *tc = tcase_create("conv_config");
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_format_cut);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_choice_per_api);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
