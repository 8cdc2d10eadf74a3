/*
 * check_env_diff.c: tests of engine/compare/env_diff.c: a field one run does not record is
 * "not recorded", never a difference; an unreadable driver version likewise; and what can
 * change numerics (arithmetic, algorithm, library versions, GPU, batch size) comes before the
 * rest (PCI bus, UUID, host).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "diff_fixture.h"

static json_t *
entry(json_t *d, const char *key, int *index)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "env_diff"), i, e) {
        if (strcmp(fx_str(e, "key"), key) == 0) {
            if (index)
                *index = (int)i;
            return e;
        }
    }
    return NULL;
}

static void
one_layer(struct fx_run *a, struct fx_run *b)
{
    double v[4] = {1, 2, 3, 4};
    fx_pair(a, b, "out", "Gemm", 4, "", 4, 0, v, v);
}

/* An engine run's knobs against a dump that has none: nothing differs, two are unknown. */
START_TEST(test_missing_is_not_recorded)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_dump_new("b", "cpu");
    one_layer(a, b);
    json_t *d = fx_diff_json(a, b, NULL);
    const char *keys[] = {"knobs.emulate", "knobs.batch"};
    for (int k = 0; k < 2; k++) {
        json_t *e = entry(d, keys[k], NULL);
        ck_assert_msg(e != NULL, "%s is listed", keys[k]);
        ck_assert_str_eq(fx_str(e, "status"), "not recorded");
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "env_diff"), i, e)
        ck_assert_msg(strcmp(fx_str(e, "status"), "differs") != 0, "%s differs",
                      fx_str(e, "key"));
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

/* The H200 recorded the driver as "for" (a misread /proc line): that is no version. */
START_TEST(test_unreadable_driver_is_not_recorded)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    fx_set(a, "env.driver", json_string("for"));
    fx_set(b, "env.driver", json_string("570.86.15"));
    one_layer(a, b);
    json_t *d = fx_diff_json(a, b, NULL);
    json_t *e = entry(d, "env.driver", NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(fx_str(e, "status"), "not recorded");
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

START_TEST(test_numerics_first)
{
    struct fx_run *a = fx_run_new("a"), *b = fx_run_new("b");
    const char *const env[][3] = {
        {"env.host", "box1", "box2"},         {"env.pci_bus", "0000:01:00", "0000:41:00"},
        {"env.gpu_uuid", "GPU-1", "GPU-2"},   {"env.cudnn", "9.14.0", "9.19.0"},
        {"env.compute_capability", "8.6", "9.0"},
        {"knobs.tf32", "x", "y"},             {"knobs.batch", "x", "y"},
        {"knobs.conv_algo", "heuristic", "autotune"},
    };
    for (size_t k = 0; k < sizeof env / sizeof env[0]; k++) {
        if (strcmp(env[k][0], "knobs.tf32") == 0) {
            fx_set(a, env[k][0], json_false());
            fx_set(b, env[k][0], json_true());
        } else if (strcmp(env[k][0], "knobs.batch") == 0) {
            fx_set(a, env[k][0], json_integer(1));
            fx_set(b, env[k][0], json_integer(8));
        } else {
            fx_set(a, env[k][0], json_string(env[k][1]));
            fx_set(b, env[k][0], json_string(env[k][2]));
        }
    }
    one_layer(a, b);
    json_t *d = fx_diff_json(a, b, NULL);
    const char *numerics[] = {"knobs.tf32", "knobs.conv_algo", "env.cudnn",
                              "env.compute_capability", "knobs.batch"};
    const char *rest[] = {"env.host", "env.pci_bus", "env.gpu_uuid"};
    for (int i = 0; i < 5; i++) {
        int in = -1;
        json_t *e = entry(d, numerics[i], &in);
        ck_assert_msg(e != NULL, "%s listed", numerics[i]);
        ck_assert_str_eq(fx_str(e, "status"), "differs");
        ck_assert_msg(strcmp(fx_str(e, "category"), "other") != 0, "%s is %s", numerics[i],
                      fx_str(e, "category"));
        for (int k = 0; k < 3; k++) {
            int ir = -1;
            json_t *r = entry(d, rest[k], &ir);
            ck_assert_msg(r != NULL, "%s listed", rest[k]);
            ck_assert_str_eq(fx_str(r, "category"), "other");
            ck_assert_msg(in < ir, "%s (%d) before %s (%d)", numerics[i], in, rest[k], ir);
        }
    }
    json_decref(d);
    fx_run_free(a);
    fx_run_free(b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("env_diff");
    TCase *tc = tcase_create("env_diff");
    tcase_add_test(tc, test_missing_is_not_recorded);
    tcase_add_test(tc, test_unreadable_driver_is_not_recorded);
    tcase_add_test(tc, test_numerics_first);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
