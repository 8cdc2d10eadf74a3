/*
 * check_db_sweeps.c: server/db_sweeps.c, sweeps as stored: a sweep is stored with links to
 * the runs it names and served back as its summary, runs (in the document's order), table
 * and document; the same document again changes nothing, other content under its id is a
 * conflict; a sweep naming a run the server lacks, one still uploading, or one of another
 * model is refused whole; the list filters, pages and counts, newest first; a deleted run
 * takes its link, not the sweep.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_fixture.h"
#include "run_doc.h"
#include "sweep_doc.h"

static char db_path[64];

static const char *RUN_F = "11111111-1111-4111-8111-111111111111";
static const char *RUN_A = "22222222-2222-4222-8222-222222222222";
static const char *RUN_B = "33333333-3333-4333-8333-333333333333";
static const char *RUN_X = "44444444-4444-4444-8444-444444444444"; /* of another model */
static const char *SWEEP_1 = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
static const char *SWEEP_2 = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
static const char *SWEEP_3 = "cccccccc-cccc-4ccc-8ccc-cccccccccccc";

static void
add_run(struct srv_db *db, const char *id, const char *model, int complete)
{
    char text[1024];
    struct gd_err err;
    struct srv_run_doc doc;
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\","
             "\"created_at\":\"2026-01-01T00:00:00Z\",\"model\":{\"name\":\"%s\",\"sha256\":null},"
             "\"backend\":\"cpu\",\"layers\":[{\"index\":0,\"name\":\"x\",\"dtype\":\"float32\","
             "\"shape\":[1],\"file\":\"layers/0000-x.npy\",\"sha256\":\"%064d\"}]}",
             id, model, 0);
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) == 0, "%s", err.msg);
    int created = 0;
    ck_assert_msg(srv_db_run_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    srv_run_doc_fini(&doc);
    if (complete) {
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE runs SET state = 'complete' WHERE id = '%s'", id);
        ck_assert_int_eq(sqlite3_exec(srv_db_conn(db), sql, 0, 0, 0), SQLITE_OK);
    }
}

static struct srv_db *
fresh_db(void)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_sweeps", 0, 1);
    add_run(db, RUN_F, "m", 1);
    add_run(db, RUN_A, "m", 1);
    add_run(db, RUN_B, "m", 1);
    add_run(db, RUN_X, "other", 1);
    return db;
}

static void
drop_db(struct srv_db *db)
{
    srv_db_close(db);
    dbf_remove(db_path);
}

/* A sweep document of model m naming float64 f and settings' runs a and b (NULL: none). */
static void
make_doc(struct srv_sweep_doc *doc, const char *id, const char *created, const char *backend,
         const char *f, const char *a, const char *b, const char *cause)
{
    json_t *settings = json_pack(
        "[{s:s, s:s, s:o, s:{s:f, s:f}, s:{s:b, s:{s:f, s:i}}, s:b, s:s},"
        " {s:s, s:s, s:o, s:{s:f}, s:b}]",
        "name", "strict", "status", a ? "ok" : "failed", "run", a ? json_string(a) : json_null(),
        "time", "forward_ms", 2.5, "x_fastest", 1.25, "vs_float64", "compared", 1, "output",
        "max_abs", 2e-7, "max_ulp", 3, "deterministic", 1, "cause", cause, "name", "fast", "status",
        b ? "ok" : "failed", "run", b ? json_string(b) : json_null(), "time", "forward_ms", 2.0,
        "batch_invariant", 0);
    json_t *root =
        json_pack("{s:s, s:i, s:s, s:s, s:{s:s}, s:s, s:{s:s}, s:{s:o}, s:o, "
                  "s:{s:{s:s, s:f}}}",
                  "format", "gpudiff-sweep", "version", 1, "id", id, "created_at", created, "model",
                  "name", "m", "backend", backend, "env", "gpu_name", "GPU 9", "float64", "run",
                  f ? json_string(f) : json_null(), "settings", settings, "answers", "fastest",
                  "setting", "fast", "forward_ms", 2.0);
    char *text = json_dumps(root, JSON_COMPACT);
    struct gd_err err;
    ck_assert_msg(srv_sweep_doc_parse(text, strlen(text), doc, &err) == 0, "%s", err.msg);
    free(text);
    json_decref(root);
}

static int64_t
count(struct srv_db *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static json_t *
get(struct srv_db *db, const char *id)
{
    char *text = NULL;
    size_t len = 0;
    struct gd_err err;
    ck_assert_msg(srv_db_sweep_get(db, id, &text, &len, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(strlen(text), len);
    ck_assert(len > 0 && text[len - 1] == '\n');
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    ck_assert_msg(j != NULL, "not JSON: %s in %.200s", jerr.text, text);
    free(text);
    return j;
}

START_TEST(store_and_serve)
{
    struct srv_db *db = fresh_db();
    struct srv_sweep_doc doc;
    struct gd_err err;
    make_doc(&doc, SWEEP_1, "2026-02-01T00:00:00Z", "cuda", RUN_F, RUN_A, RUN_B, "tf32=on");
    int created = -1;
    ck_assert_msg(srv_db_sweep_create(db, &doc, 1000, &created, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(created, 1);
    json_t *j = get(db, SWEEP_1);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), SWEEP_1);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "m");
    ck_assert_str_eq(json_string_value(json_object_get(j, "backend")), "cuda");
    ck_assert_str_eq(json_string_value(json_object_get(j, "gpu")), "GPU 9");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "settings")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(j, "received_at")), "1970-01-01T00:16:40Z");
    json_t *fast = json_object_get(j, "fastest");
    ck_assert_str_eq(json_string_value(json_object_get(fast, "setting")), "fast");
    ck_assert(json_is_null(json_object_get(j, "cheapest_deterministic")));
    /* the runs in the document's order: float64, then the settings */
    json_t *runs = json_object_get(j, "runs");
    ck_assert_int_eq(json_array_size(runs), 3);
    const char *want[3][3] = {
        {RUN_F, "float64", NULL}, {RUN_A, "setting", "strict"}, {RUN_B, "setting", "fast"}};
    for (int i = 0; i < 3; i++) {
        json_t *r = json_array_get(runs, (size_t)i);
        ck_assert_str_eq(json_string_value(json_object_get(r, "run")), want[i][0]);
        ck_assert_str_eq(json_string_value(json_object_get(r, "role")), want[i][1]);
        if (want[i][2] == NULL)
            ck_assert(json_is_null(json_object_get(r, "setting")));
        else
            ck_assert_str_eq(json_string_value(json_object_get(r, "setting")), want[i][2]);
        ck_assert(json_is_true(json_object_get(r, "tensors")));
    }
    /* the table: checked rows, numbers as numbers, the unmeasured as null */
    json_t *row = json_array_get(json_object_get(j, "table"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(row, "setting")), "strict");
    ck_assert(json_number_value(json_object_get(row, "forward_ms")) == 2.5);
    ck_assert(json_number_value(json_object_get(json_object_get(row, "vs_float64"), "max_abs")) ==
              2e-7);
    ck_assert(json_is_true(json_object_get(row, "deterministic")));
    ck_assert(json_is_null(json_object_get(row, "batch_invariant")));
    ck_assert_str_eq(json_string_value(json_object_get(row, "cause")), "tf32=on");
    row = json_array_get(json_object_get(j, "table"), 1);
    ck_assert(json_is_false(json_object_get(row, "batch_invariant")));
    ck_assert(json_is_null(json_object_get(row, "end_to_end_ms")));
    /* the document itself */
    json_t *sweep = json_object_get(j, "sweep");
    ck_assert_str_eq(json_string_value(json_object_get(sweep, "format")), "gpudiff-sweep");
    ck_assert_int_eq(json_array_size(json_object_get(sweep, "settings")), 2);
    json_decref(j);
    /* the same again: nothing changes */
    created = -1;
    ck_assert_int_eq(srv_db_sweep_create(db, &doc, 2000, &created, &err), 0);
    ck_assert_int_eq(created, 0);
    srv_sweep_doc_fini(&doc);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM sweeps"), 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM sweep_runs"), 3);
    /* other content, same id */
    make_doc(&doc, SWEEP_1, "2026-02-01T00:00:00Z", "cuda", RUN_F, RUN_A, RUN_B, "other");
    ck_assert_int_eq(srv_db_sweep_create(db, &doc, 3000, &created, &err), SRV_ECONFLICT);
    ck_assert_msg(strstr(err.msg, "other content") != NULL, "%s", err.msg);
    srv_sweep_doc_fini(&doc);
    ck_assert_int_eq(srv_db_sweep_get(db, SWEEP_2, &(char *){NULL}, &(size_t){0}, &err),
                     SRV_ENOTFOUND);
    drop_db(db);
}
END_TEST

START_TEST(runs_must_be_there)
{
    struct srv_db *db = fresh_db();
    add_run(db, "55555555-5555-4555-8555-555555555555", "m", 0);
    static const struct {
        const char *a, *says;
    } cases[] = {
        {"66666666-6666-4666-8666-666666666666", "is not on the server"},
        {"55555555-5555-4555-8555-555555555555", "still uploading"},
        {"44444444-4444-4444-8444-444444444444", "is of model other"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct srv_sweep_doc doc;
        struct gd_err err;
        int created = -1;
        make_doc(&doc, SWEEP_2, "2026-02-01T00:00:00Z", "cuda", RUN_F, cases[i].a, RUN_B, "");
        ck_assert_int_eq(srv_db_sweep_create(db, &doc, 1, &created, &err), SRV_ECONFLICT);
        ck_assert_msg(strstr(err.msg, cases[i].says) != NULL && strstr(err.msg, cases[i].a), "%s",
                      err.msg);
        ck_assert_int_eq(created, -1);
        srv_sweep_doc_fini(&doc);
    }
    /* refused whole: no sweep, no link */
    ck_assert_int_eq(count(db, "SELECT count(*) FROM sweeps"), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM sweep_runs"), 0);
    /* a failed setting names no run, and needs none */
    struct srv_sweep_doc doc;
    struct gd_err err;
    int created = 0;
    make_doc(&doc, SWEEP_2, "2026-02-01T00:00:00Z", "cuda", NULL, RUN_A, NULL, "");
    ck_assert_msg(srv_db_sweep_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(doc.n_runs, 1);
    srv_sweep_doc_fini(&doc);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM sweep_runs"), 1);
    drop_db(db);
}
END_TEST

static json_t *
list(struct srv_db *db, const char *model, const char *backend, int64_t limit, int64_t offset)
{
    struct srv_sweep_filter f = {
        .model = model, .backend = backend, .limit = limit, .offset = offset};
    json_t *out = NULL;
    struct gd_err err;
    ck_assert_msg(srv_db_sweeps_list(db, &f, &out, &err) == 0, "%s", err.msg);
    return out;
}

static const char *
nth_id(json_t *l, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(l, "sweeps"), i), "id"));
}

START_TEST(list_and_links)
{
    struct srv_db *db = fresh_db();
    struct gd_err err;
    int created;
    const char *ids[3] = {SWEEP_1, SWEEP_2, SWEEP_3};
    const char *dates[3] = {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"};
    const char *backends[3] = {"cuda", "cpu", "cuda"};
    for (int i = 0; i < 3; i++) {
        struct srv_sweep_doc doc;
        make_doc(&doc, ids[i], dates[i], backends[i], i == 0 ? RUN_F : NULL, i == 0 ? RUN_A : NULL,
                 i == 0 ? RUN_B : NULL, "");
        ck_assert_msg(srv_db_sweep_create(db, &doc, 10 + i, &created, &err) == 0, "%s", err.msg);
        srv_sweep_doc_fini(&doc);
    }
    json_t *l = list(db, NULL, NULL, 50, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(l, "total")), 3);
    ck_assert_str_eq(nth_id(l, 0), SWEEP_2); /* newest first, by created_at */
    ck_assert_str_eq(nth_id(l, 1), SWEEP_1);
    ck_assert_str_eq(nth_id(l, 2), SWEEP_3);
    json_t *first = json_array_get(json_object_get(l, "sweeps"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "received_at")),
                     "1970-01-01T00:00:11Z");
    json_decref(l);
    l = list(db, NULL, "cuda", 1, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(l, "total")), 2);
    ck_assert_int_eq(json_array_size(json_object_get(l, "sweeps")), 1);
    ck_assert_str_eq(nth_id(l, 0), SWEEP_3);
    json_decref(l);
    l = list(db, "m", NULL, 50, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(l, "total")), 3);
    json_decref(l);
    l = list(db, "none", NULL, 50, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(l, "total")), 0);
    ck_assert_int_eq(json_array_size(json_object_get(l, "sweeps")), 0);
    json_decref(l);
    /* a run deleted: its link goes, the sweep stays */
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db),
                                  "DELETE FROM layers WHERE run_id = "
                                  "'22222222-2222-4222-8222-222222222222';"
                                  "DELETE FROM runs WHERE id = "
                                  "'22222222-2222-4222-8222-222222222222'",
                                  0, 0, 0),
                     SQLITE_OK);
    json_t *j = get(db, SWEEP_1);
    ck_assert_int_eq(json_array_size(json_object_get(j, "runs")), 2);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(j, "sweep"), "settings")), 2);
    json_decref(j);
    /* retention dropped a run's tensors: the link says so */
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db),
                                  "UPDATE runs SET trimmed_at = 5 WHERE id = "
                                  "'33333333-3333-4333-8333-333333333333'",
                                  0, 0, 0),
                     SQLITE_OK);
    j = get(db, SWEEP_1);
    ck_assert(
        json_is_false(json_object_get(json_array_get(json_object_get(j, "runs"), 1), "tensors")));
    json_decref(j);
    drop_db(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_sweeps");
    TCase *tc = tcase_create("db_sweeps");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, store_and_serve);
    tcase_add_test(tc, runs_must_be_there);
    tcase_add_test(tc, list_and_links);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
