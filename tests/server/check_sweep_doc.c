/*
 * check_sweep_doc.c: server/sweep_doc.c, the checks of an uploaded sweep document: what it is
 * filed by, the runs it names (float64 first, then the settings in order), the table rows
 * holding only values of the promised types, the summary, the canonical form and its hash
 * (key order does not matter), and each rule broken answered with the field's path.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "sweep_doc.h"

#define ID "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define RA "11111111-1111-4111-8111-111111111111"
#define RB "22222222-2222-4222-8222-222222222222"

static const char GOOD[] =
    "{\"format\":\"gpudiff-sweep\",\"version\":1,\"id\":\"" ID "\","
    "\"created_at\":\"2026-02-01T10:00:00Z\",\"model\":{\"name\":\"lenet\"},\"backend\":\"cpu\","
    "\"float64\":{\"run\":\"" RA "\",\"status\":\"ok\"},"
    "\"settings\":[{\"name\":\"emulate=none\",\"status\":\"ok\",\"run\":\"" RB "\","
    "\"time\":{\"forward_ms\":12.5,\"end_to_end_ms\":\"fast\"},\"deterministic\":true,"
    "\"vs_float64\":{\"compared\":true,\"output\":{\"max_abs\":2.4e-7,\"max_ulp\":3},"
    "\"first_divergent\":null},\"cause\":7},"
    "{\"name\":\"emulate=tf32:gemm\",\"status\":\"failed\",\"error\":\"no\"}],"
    "\"answers\":{\"fastest\":{\"setting\":\"emulate=none\",\"forward_ms\":12.5}}}";

START_TEST(a_good_document)
{
    struct srv_sweep_doc doc;
    struct gd_err err;
    ck_assert_msg(srv_sweep_doc_parse(GOOD, strlen(GOOD), &doc, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(doc.id, ID);
    ck_assert_str_eq(doc.model, "lenet");
    ck_assert_str_eq(doc.backend, "cpu");
    ck_assert_str_eq(doc.gpu, "");
    ck_assert_int_eq(doc.n_settings, 2);
    ck_assert_int_eq(doc.created_ts, 1769940000);
    ck_assert_int_eq(doc.n_runs, 2);
    ck_assert_str_eq(doc.runs[0].run_id, RA);
    ck_assert_str_eq(doc.runs[0].role, "float64");
    ck_assert_str_eq(doc.runs[1].run_id, RB);
    ck_assert_str_eq(doc.runs[1].setting, "emulate=none");
    json_t *table = json_loads(doc.table, 0, NULL);
    json_t *row = json_array_get(table, 0);
    ck_assert(json_number_value(json_object_get(row, "forward_ms")) == 12.5);
    /* a string where a number belongs, a number where text belongs: null, not passed on */
    ck_assert(json_is_null(json_object_get(row, "end_to_end_ms")));
    ck_assert(json_is_null(json_object_get(row, "cause")));
    ck_assert(json_is_true(json_object_get(row, "deterministic")));
    ck_assert(json_is_null(json_object_get(json_object_get(row, "vs_float64"), "first_divergent")));
    row = json_array_get(table, 1);
    ck_assert_str_eq(json_string_value(json_object_get(row, "status")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(row, "error")), "no");
    json_decref(table);
    json_t *sum = json_loads(doc.summary, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sum, "fastest"), "setting")),
                     "emulate=none");
    ck_assert(json_is_null(json_object_get(sum, "gpu")));
    json_decref(sum);
    char sha[65];
    memcpy(sha, doc.content_sha256, sizeof sha);
    srv_sweep_doc_fini(&doc);
    /* the same document with its keys in another order hashes the same */
    json_t *j = json_loads(GOOD, 0, NULL);
    char *sorted = json_dumps(j, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(j);
    ck_assert_int_eq(srv_sweep_doc_parse(sorted, strlen(sorted), &doc, &err), 0);
    ck_assert_str_eq(doc.content_sha256, sha);
    srv_sweep_doc_fini(&doc);
    free(sorted);
}
END_TEST

/* GOOD with one substitution: the first occurrence of from replaced by to. */
static char *
variant(const char *from, const char *to)
{
    const char *at = strstr(GOOD, from);
    ck_assert_msg(at != NULL, "%s not in the document", from);
    size_t n = strlen(GOOD) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - GOOD), GOOD, to, at + strlen(from));
    return s;
}

START_TEST(broken_rules)
{
    static const struct {
        const char *from, *to;
        int code;
        const char *says;
    } cases[] = {
        {"{\"format\"", "[{\"format\"", SRV_EBADJSON, "not JSON"},
        {"\"gpudiff-sweep\"", "\"gpudiff-run\"", SRV_EBADREQ, "format: must be"},
        {"\"version\":1", "\"version\":2", SRV_EBADREQ, "version: must be 1"},
        {"\"id\":\"" ID "\"", "\"id\":\"AAAA\"", SRV_EBADREQ, "id: must be a lowercase UUID"},
        {"2026-02-01T10:00:00Z", "yesterday", SRV_EBADREQ, "created_at: must be an RFC 3339"},
        {"{\"name\":\"lenet\"}", "{\"name\":\"\"}", SRV_EBADREQ, "model.name:"},
        {"{\"name\":\"lenet\"}", "\"lenet\"", SRV_EBADREQ, "model: must be an object"},
        {"\"backend\":\"cpu\"", "\"backend\":\"c p u\"", SRV_EBADREQ, "backend: 1 to 64"},
        {"\"float64\":{\"run\":\"" RA "\"", "\"float64\":{\"run\":\"x\"", SRV_EBADREQ,
         "float64.run: must be null or a run id"},
        {"\"settings\":[", "\"settings\":7,\"x\":[", SRV_EBADREQ,
         "settings: must be an array of at least one setting"},
        {"\"name\":\"emulate=none\"", "\"name\":\"emulate=tf32:gemm\"", SRV_EBADREQ,
         "settings[1].name: emulate=tf32:gemm is given twice"},
        {"\"name\":\"emulate=none\"", "\"name\":\"\"", SRV_EBADREQ,
         "settings[0].name: must not be empty"},
        {"\"status\":\"ok\",\"run\"", "\"status\":\"great\",\"run\"", SRV_EBADREQ,
         "settings[0].status: must be ok, failed or not run"},
        {"\"run\":\"" RB "\"", "\"run\":null", SRV_EBADREQ,
         "settings[0].run: a setting that ran names its run"},
        {"\"run\":\"" RB "\"", "\"run\":\"" RA "\"", SRV_EBADREQ, "run " RA " is named twice"},
        {"\"forward_ms\":12.5,", "\"forward_ms\":-1,", SRV_EBADREQ,
         "settings[0].time.forward_ms: must be a number >= 0"},
        {"\"time\":{", "\"time\":7,\"x\":{", SRV_EBADREQ, "settings[0].time: must be an object"},
        {"{\"name\":\"emulate=none\"", "7,{\"name\":\"emulate=none\"", SRV_EBADREQ,
         "settings[0]: must be an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = variant(cases[i].from, cases[i].to);
        struct srv_sweep_doc doc;
        struct gd_err err = {0};
        int rc = srv_sweep_doc_parse(text, strlen(text), &doc, &err);
        ck_assert_msg(rc == cases[i].code && strstr(err.msg, cases[i].says) != NULL,
                      "case %zu: %d \"%s\"", i, rc, err.msg);
        free(text);
    }
    static const char *const whole[] = {
        "", "[]", "{}", "{\"format\":\"gpudiff-sweep\"}", "null", "{\"format\":1}"};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        struct srv_sweep_doc doc;
        struct gd_err err = {0};
        int rc = srv_sweep_doc_parse(whole[i], strlen(whole[i]), &doc, &err);
        ck_assert_msg(rc == SRV_EBADJSON || rc == SRV_EBADREQ, "%s: %d", whole[i], rc);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sweep_doc");
    TCase *tc = tcase_create("sweep_doc");
    tcase_add_test(tc, a_good_document);
    tcase_add_test(tc, broken_rules);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
