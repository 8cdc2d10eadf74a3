/*
 * check_run_doc.c: server/run_doc.c's rules of identity and size: layer names unique within
 * a run (the refusal names both positions), every shape dimension bounded wherever a zero
 * stands, and the keys run.schema.json does not name kept only when few (16) and small
 * (64 KiB of JSON each); a document within the rules still parses.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_doc.h"
#include "server.h"

#define SHA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* A run.json of two float32 layers named n0 and n1 of shapes s0 and s1, with extra keys. */
static char *
doc_text(const char *n0, const char *n1, const char *s0, const char *s1, const char *extra)
{
    size_t cap = 4096 + strlen(extra);
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    snprintf(
        t, cap,
        "{\"format\":\"gpudiff-run\",\"version\":1,"
        "\"id\":\"dddddddd-dddd-4ddd-8ddd-dddddddddddd\",\"created_at\":\"2026-01-01T00:00:00Z\","
        "\"model\":{\"name\":\"m\",\"sha256\":null},\"backend\":\"cpu\"%s,\"layers\":["
        "{\"index\":0,\"name\":\"%s\",\"dtype\":\"float32\",\"shape\":%s,"
        "\"file\":\"layers/0000-a.npy\",\"sha256\":\"" SHA "\"},"
        "{\"index\":1,\"name\":\"%s\",\"dtype\":\"float32\",\"shape\":%s,"
        "\"file\":\"layers/0001-b.npy\",\"sha256\":\"" SHA "\"}]}",
        extra, n0, s0, n1, s1);
    return t;
}

static int
parse(char *text, struct gd_err *err)
{
    struct srv_run_doc doc;
    int rc = srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, err);
    if (rc == 0)
        srv_run_doc_fini(&doc);
    free(text);
    return rc;
}

START_TEST(names_are_unique)
{
    struct gd_err err = {0};
    ck_assert_int_eq(parse(doc_text("relu", "relu2", "[4]", "[4]", ""), &err), 0);
    ck_assert_int_eq(parse(doc_text("relu", "relu", "[4]", "[4]", ""), &err), SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "layers[1].name") != NULL && strstr(err.msg, "layers[0]"), "%s",
                  err.msg);
}
END_TEST

START_TEST(every_dimension_is_bounded)
{
    struct gd_err err = {0};
    ck_assert_int_eq(parse(doc_text("a", "b", "[0, 4]", "[4, 0, 7]", ""), &err), 0);
    static const char *const huge[] = {"[0, 9223372036854775807, 9223372036854775807]",
                                       "[9223372036854775807, 0, 9223372036854775807]",
                                       "[4611686018427387904, 0, 4]"};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        ck_assert_msg(parse(doc_text("a", "b", huge[i], "[4]", ""), &err) == SRV_EBADREQ,
                      "%s accepted", huge[i]);
        ck_assert_msg(strstr(err.msg, "layers[0].shape") != NULL, "%s", err.msg);
    }
}
END_TEST

START_TEST(unknown_keys_are_few_and_small)
{
    struct gd_err err = {0};
    char extra[2048] = "";
    size_t n = 0;
    /* Objects, arrays, strings, numbers: any JSON value may be kept. */
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(extra + n, sizeof extra - n,
                              i % 4 == 0   ? ",\"k%d\":{\"v\":[%d]}"
                              : i % 4 == 1 ? ",\"k%d\":[%d]"
                              : i % 4 == 2 ? ",\"k%d\":\"s%d\""
                                           : ",\"k%d\":%d",
                              i, i);
    ck_assert_msg(parse(doc_text("a", "b", "[4]", "[4]", extra), &err) == 0, "%s", err.msg);
    snprintf(extra + n, sizeof extra - n, ",\"k16\":1");
    ck_assert_int_eq(parse(doc_text("a", "b", "[4]", "[4]", extra), &err), SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "more than 16") != NULL, "%s", err.msg);

    /* 64 KiB of JSON: the quotes count, so a string of 65534 bytes is the most. */
    size_t big = 64 * 1024;
    char *value = malloc(big + 32);
    ck_assert_ptr_nonnull(value);
    memset(value, 'x', big + 32);
    snprintf(value, 16, ",\"junk\":\"");
    value[9] = 'x';
    value[9 + big - 2] = '"';
    value[9 + big - 1] = '\0';
    ck_assert_msg(parse(doc_text("a", "b", "[4]", "[4]", value), &err) == 0, "%s", err.msg);
    value[9 + big - 2] = 'x';
    value[9 + big - 1] = '"';
    value[9 + big] = '\0';
    ck_assert_int_eq(parse(doc_text("a", "b", "[4]", "[4]", value), &err), SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "junk") != NULL && strstr(err.msg, "65536"), "%s", err.msg);
    free(value);
}
END_TEST

START_TEST(env_labels_are_a_string_map)
{
    /* jobsrv: env.labels (serve --label) is an object of strings; env's other values are
       strings, and labels nest no deeper */
    struct gd_err err = {0};
    ck_assert_msg(parse(doc_text("a", "b", "[4]", "[4]",
                                 ",\"env\":{\"host\":\"h\",\"labels\":{\"gpu\":\"sm_86\"}}"),
                        &err) == 0,
                  "%s", err.msg);
    ck_assert_int_eq(parse(doc_text("a", "b", "[4]", "[4]",
                                    ",\"env\":{\"labels\":{\"gpu\":86}}"),
                           &err),
                     SRV_EBADREQ);
    ck_assert_msg(strstr(err.msg, "env.labels.gpu") != NULL, "%s", err.msg);
    ck_assert_int_eq(parse(doc_text("a", "b", "[4]", "[4]", ",\"env\":{\"other\":{}}"), &err),
                     SRV_EBADREQ);
    ck_assert_int_eq(parse(doc_text("a", "b", "[4]", "[4]", ",\"labels\":{\"labels\":{}}"), &err),
                     SRV_EBADREQ);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("run_doc");
    TCase *tc = tcase_create("identity and size");
    tcase_add_test(tc, names_are_unique);
    tcase_add_test(tc, every_dimension_is_bounded);
    tcase_add_test(tc, unknown_keys_are_few_and_small);
    tcase_add_test(tc, env_labels_are_a_string_map);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
