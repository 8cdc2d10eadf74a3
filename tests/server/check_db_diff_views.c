/*
 * check_db_diff_views.c: server/db_diff_views.c, the stored views of cached diffs: a view is
 * found by its diff's key once stored; its summary comes back as stored; pages in the diff's
 * order, whole ranges without a filter, and filtered by verdict, op, a name's part in any
 * case (LIKE's wildcards taken as themselves) or a whole name, with the count of what passes;
 * the graph's nodes; a second store keeps the first; a view of an older format is made again;
 * a view goes with its diff; a run's stored document, whatever retention did.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"
#include "db_fixture.h"
#include "diff_view.h"
#include "run_doc.h"

static char db_path[64];

static const char *RUN_A = "11111111-1111-4111-8111-111111111111";
static const char *RUN_B = "22222222-2222-4222-8222-222222222222";

static void
add_run(struct srv_db *db, const char *id)
{
    char text[1024];
    struct gd_err err;
    struct srv_run_doc doc;
    snprintf(
        text, sizeof text,
        "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\","
        "\"created_at\":\"2026-01-01T00:00:00Z\",\"model\":{\"name\":\"m\",\"sha256\":null},"
        "\"backend\":\"cpu\",\"knobs\":{\"tf32\":true},\"layers\":[{\"index\":0,\"name\":\"x\","
        "\"dtype\":\"float32\",\"shape\":[1],\"file\":\"layers/0000-x.npy\","
        "\"sha256\":\"%064d\"}]}",
        id, 0);
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) == 0, "%s", err.msg);
    int created = 0;
    ck_assert_msg(srv_db_run_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    srv_run_doc_fini(&doc);
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

/* Six layers: Block_1.Conv, block_1.relu, bLock%2.gemm, block_2.relu, out_x, outlier. */
static const char *NAMES[] = {"Block_1.Conv", "block_1.relu", "bLock%2.gemm",
                              "block_2.relu", "out_x",        "outlier"};
static const char *OPS[] = {"Conv", "Relu", "Gemm", "Relu", "Gemm", ""};
static const char *VERDICTS[] = {"identical", "noise",     "divergent",
                                 "noise",     "amplified", "incomparable"};

static char *
diff_text(void)
{
    json_t *layers = json_array();
    for (int i = 0; i < 6; i++)
        json_array_append_new(layers, json_pack("{s:s, s:s, s:s, s:f, s:[s]}", "name", NAMES[i],
                                                "op", OPS[i], "verdict", VERDICTS[i], "err",
                                                i * 0.125, "inputs", "z"));
    json_t *d = json_pack("{s:{s:s}, s:{s:s}, s:n, s:s, s:o}", "a", "id", RUN_A, "b", "id", RUN_B,
                          "truth", "first_divergent", "bLock%2.gemm", "layers", layers);
    char *text = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return text;
}

static json_t *
meta_from_db(void *user, const char *id)
{
    json_t *m = NULL;
    struct gd_err err;
    return srv_db_run_meta(user, id, &m, &err) == 0 ? m : json_null();
}

/* A database with the two runs, the diff of a against b cached, and its view when asked. */
static struct srv_db *
setup(struct srv_diff_key *key, int64_t *diff_id, int with_view)
{
    struct srv_db *db = dbf_open(db_path, sizeof db_path, "check_db_diff_views", 0, 1);
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    srv_diff_key_default(key, RUN_A, RUN_B);
    key->engine_version = "1.0";
    char *text = diff_text();
    struct srv_diff_layer_sum sums[6];
    for (int i = 0; i < 6; i++)
        sums[i] = (struct srv_diff_layer_sum){NAMES[i], VERDICTS[i], i * 0.125, 0};
    struct srv_diff_row row = {"bLock%2.gemm", 6, sums, text, 0.1, 0};
    struct gd_err err;
    ck_assert_msg(srv_db_diff_put(db, key, &row, 100, &err) == 0, "%s", err.msg);
    int has = 1;
    int64_t n = -1;
    ck_assert_int_eq(srv_db_diff_view_locate(db, key, diff_id, &has, &n, &err), 0);
    ck_assert_int_eq(has, 0);
    if (with_view) {
        struct srv_diff_view v;
        ck_assert_msg(srv_diff_view_make(text, strlen(text), meta_from_db, db, &v, &err) == 0, "%s",
                      err.msg);
        ck_assert_msg(srv_db_diff_view_put(db, *diff_id, &v, 200, &err) == 0, "%s", err.msg);
        srv_diff_view_fini(&v);
    }
    free(text);
    return db;
}

static void
done(struct srv_db *db)
{
    srv_db_close(db);
    dbf_remove(db_path);
}

START_TEST(locate_and_summary)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 1);
    struct gd_err err;
    int has = 0;
    int64_t n = 0, id2 = 0;
    ck_assert_int_eq(srv_db_diff_view_locate(db, &key, &id2, &has, &n, &err), 0);
    ck_assert_int_eq(id2, id);
    ck_assert_int_eq(has, 1);
    ck_assert_int_eq(n, 6);
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(srv_db_diff_view_summary(db, id, &text, &len, &err), 0);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_int_eq(text[len - 1], '\n');
    json_t *s = json_loads(text, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "n_layers")), 6);
    /* the runs' stored documents, with their layer counts */
    json_t *a = json_object_get(json_object_get(s, "runs"), "a");
    ck_assert_str_eq(json_string_value(json_object_get(a, "id")), RUN_A);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "n_layers")), 1);
    ck_assert(json_is_true(json_object_get(json_object_get(a, "knobs"), "tf32")));
    json_decref(s);
    free(text);
    /* another key: not cached */
    key.rtol = 0.5;
    ck_assert_int_eq(srv_db_diff_view_locate(db, &key, &id2, &has, &n, &err), SRV_ENOTFOUND);
    done(db);
}
END_TEST

/* The page's layer names, and its total. */
static int64_t
page(struct srv_db *db, int64_t id, struct srv_diff_view_filter f, int64_t offset, int64_t limit,
     char *names, size_t size)
{
    struct srv_buf out = {0};
    struct gd_err err;
    ck_assert_msg(srv_db_diff_view_page(db, id, 6, &f, offset, limit, &out, &err) == 0, "%s",
                  err.msg);
    ck_assert_int_eq(out.data[out.len - 1], '\n');
    json_error_t jerr;
    json_t *p = json_loads(out.data, 0, &jerr);
    ck_assert_msg(p != NULL, "a page is JSON: %s", jerr.text);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "offset")), offset);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "limit")), limit);
    names[0] = '\0';
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(p, "layers"), i, l)
    {
        char one[64];
        snprintf(one, sizeof one, "%s%s@%lld", i ? " " : "",
                 json_string_value(json_object_get(l, "name")),
                 (long long)json_integer_value(json_object_get(l, "i")));
        strncat(names, one, size - strlen(names) - 1);
    }
    int64_t total = json_integer_value(json_object_get(p, "total"));
    json_decref(p);
    srv_buf_fini(&out);
    return total;
}

START_TEST(pages)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 1);
    char names[512];
    struct srv_diff_view_filter none = {0};
    ck_assert_int_eq(page(db, id, none, 0, 100, names, sizeof names), 6);
    ck_assert_str_eq(names, "Block_1.Conv@0 block_1.relu@1 bLock%2.gemm@2 block_2.relu@3 out_x@4 "
                            "outlier@5");
    ck_assert_int_eq(page(db, id, none, 2, 3, names, sizeof names), 6);
    ck_assert_str_eq(names, "bLock%2.gemm@2 block_2.relu@3 out_x@4");
    ck_assert_int_eq(page(db, id, none, 6, 3, names, sizeof names), 6);
    ck_assert_str_eq(names, "");
    struct srv_diff_view_filter relu = {.op = "Relu"};
    ck_assert_int_eq(page(db, id, relu, 1, 10, names, sizeof names), 2);
    ck_assert_str_eq(names, "block_2.relu@3");
    struct srv_diff_view_filter noise = {.verdict = "noise"};
    ck_assert_int_eq(page(db, id, noise, 0, 10, names, sizeof names), 2);
    ck_assert_str_eq(names, "block_1.relu@1 block_2.relu@3");
    /* a part of a name in any case: "BLOCK" is in four names */
    struct srv_diff_view_filter block = {.q = "BLOCK"};
    ck_assert_int_eq(page(db, id, block, 0, 10, names, sizeof names), 4);
    /* "_" and "%" are themselves, not LIKE's wildcards: "k_" is in three names (not in
     * bLock%2.gemm), "k%" in one (not in the three) */
    struct srv_diff_view_filter under = {.q = "k_"};
    ck_assert_int_eq(page(db, id, under, 0, 10, names, sizeof names), 3);
    ck_assert_str_eq(names, "Block_1.Conv@0 block_1.relu@1 block_2.relu@3");
    struct srv_diff_view_filter pct = {.q = "k%"};
    ck_assert_int_eq(page(db, id, pct, 0, 10, names, sizeof names), 1);
    ck_assert_str_eq(names, "bLock%2.gemm@2");
    struct srv_diff_view_filter out_ = {.q = "out_"};
    ck_assert_int_eq(page(db, id, out_, 0, 10, names, sizeof names), 1);
    ck_assert_str_eq(names, "out_x@4");
    /* a whole name, exactly (case included) */
    struct srv_diff_view_filter exact = {.name = "block_2.relu"};
    ck_assert_int_eq(page(db, id, exact, 0, 10, names, sizeof names), 1);
    ck_assert_str_eq(names, "block_2.relu@3");
    struct srv_diff_view_filter wrong_case = {.name = "BLOCK_2.relu"};
    ck_assert_int_eq(page(db, id, wrong_case, 0, 10, names, sizeof names), 0);
    /* filters together */
    struct srv_diff_view_filter both = {.verdict = "noise", .q = "2."};
    ck_assert_int_eq(page(db, id, both, 0, 10, names, sizeof names), 1);
    ck_assert_str_eq(names, "block_2.relu@3");
    done(db);
}
END_TEST

struct nodes_seen {
    int n;
    char verdicts[8];
    double err[8];
};

static int
node(void *user, int64_t idx, const char *name, const char *op, const char *verdict, double err_v,
     struct gd_err *err)
{
    (void)err;
    struct nodes_seen *s = user;
    ck_assert_int_eq(idx, s->n);
    ck_assert_str_eq(name, NAMES[idx]);
    ck_assert_str_eq(op, OPS[idx]);
    s->verdicts[s->n] = srv_diff_view_code(verdict);
    s->err[s->n] = err_v;
    s->n++;
    return 0;
}

START_TEST(graph_nodes)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 1);
    struct nodes_seen seen = {0};
    struct gd_err err;
    ck_assert_int_eq(srv_db_diff_view_nodes(db, id, node, &seen, &err), 0);
    ck_assert_int_eq(seen.n, 6);
    seen.verdicts[6] = '\0';
    ck_assert_str_eq(seen.verdicts, "indnax");
    ck_assert_double_eq(seen.err[4], 0.5);
    done(db);
}
END_TEST

START_TEST(stored_once_made_again_when_stale)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_views"), 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_view_layers"), 6);
    /* a second store of another view keeps the first */
    struct srv_diff_view v = {0};
    struct srv_diff_view_row rows[1] = {{"only", "Op", "noise", 0.0, "{\"name\":\"only\"}"}};
    v.summary = "{\"n_layers\":1}";
    v.n_layers = 1;
    v.rows = rows;
    struct gd_err err;
    ck_assert_int_eq(srv_db_diff_view_put(db, id, &v, 300, &err), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_view_layers"), 6);
    /* a view of an older format is not found, and a new store replaces it */
    sqlite3 *c = srv_db_conn(db);
    ck_assert_int_eq(sqlite3_exec(c, "UPDATE diff_views SET format = 0", 0, 0, 0), SQLITE_OK);
    int has = 1;
    int64_t n = 0, id2 = 0;
    ck_assert_int_eq(srv_db_diff_view_locate(db, &key, &id2, &has, &n, &err), 0);
    ck_assert_int_eq(has, 0);
    char *text = NULL;
    size_t len;
    ck_assert_int_eq(srv_db_diff_view_summary(db, id, &text, &len, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(srv_db_diff_view_put(db, id, &v, 300, &err), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_view_layers"), 1);
    ck_assert_int_eq(srv_db_diff_view_summary(db, id, &text, &len, &err), 0);
    ck_assert_str_eq(text, "{\"n_layers\":1}\n");
    free(text);
    /* a view of a diff that is not there is no view */
    ck_assert_int_eq(srv_db_diff_view_put(db, id + 1000, &v, 300, &err), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_views"), 1);
    done(db);
}
END_TEST

START_TEST(goes_with_its_diff)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 1);
    sqlite3 *c = srv_db_conn(db);
    ck_assert_int_eq(sqlite3_exec(c, "DELETE FROM diffs", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_views"), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_view_layers"), 0);
    done(db);
}
END_TEST

START_TEST(run_meta)
{
    struct srv_diff_key key;
    int64_t id;
    struct srv_db *db = setup(&key, &id, 0);
    json_t *m = NULL;
    struct gd_err err;
    /* retention's trim leaves the document to read */
    sqlite3 *c = srv_db_conn(db);
    ck_assert_int_eq(sqlite3_exec(c, "UPDATE runs SET trimmed_at = 5", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(srv_db_run_meta(db, RUN_B, &m, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(m, "backend")), "cpu");
    ck_assert_str_eq(json_string_value(json_object_get(m, "state")), "uploading");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "n_layers")), 1);
    ck_assert_ptr_null(json_object_get(m, "layers"));
    json_decref(m);
    ck_assert_int_eq(srv_db_run_meta(db, "44444444-4444-4444-8444-444444444444", &m, &err),
                     SRV_ENOTFOUND);
    done(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_diff_views");
    TCase *tc = tcase_create("views");
    tcase_add_test(tc, locate_and_summary);
    tcase_add_test(tc, pages);
    tcase_add_test(tc, graph_nodes);
    tcase_add_test(tc, stored_once_made_again_when_stale);
    tcase_add_test(tc, goes_with_its_diff);
    tcase_add_test(tc, run_meta);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
