/*
 * check_db_diffs.c: server/db_diffs.c, the diff cache: the JSON text comes back byte for
 * byte (with the newline it is served with); every part of the key tells diffs apart; a
 * second write of a key keeps the first; layer summaries by name (the first of a name) and
 * of the last layer, nulls for numbers that are not finite; rows go with their runs, the
 * truth run included; and the cap (sec, --diff-cache-max): the cache never holds more, the
 * least recently used rows go first, those of other tolerances before the defaults, a
 * read counts as a use, a diff larger than the cap is not stored.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "db.h"
#include "db_fixture.h"
#include "run_doc.h"

static char db_path[64];

static struct srv_db *
fresh_db(void)
{
    return dbf_open(db_path, sizeof db_path, "check_db_diffs", 0, 1);
}

static void
drop_db(struct srv_db *db)
{
    srv_db_close(db);
    dbf_remove(db_path);
}

static const char *RUN_A = "11111111-1111-4111-8111-111111111111";
static const char *RUN_B = "22222222-2222-4222-8222-222222222222";
static const char *RUN_T = "33333333-3333-4333-8333-333333333333";

/* A run row to hang diffs on (the foreign keys). */
static void
add_run(struct srv_db *db, const char *id)
{
    char text[1024];
    struct gd_err err;
    struct srv_run_doc doc;
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\","
             "\"created_at\":\"2026-01-01T00:00:00Z\",\"model\":{\"name\":\"m\",\"sha256\":null},"
             "\"backend\":\"cpu\",\"layers\":[{\"index\":0,\"name\":\"x\",\"dtype\":\"float32\","
             "\"shape\":[1],\"file\":\"layers/0000-x.npy\",\"sha256\":\"%064d\"}]}",
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

static const struct srv_diff_layer_sum sums[] = {
    {"conv", "identical", 0.0, 0.0},
    {"fc", "divergent", 0.5, 0.25},
    {"fc", "noise", 1e-7, 2e-7}, /* a second layer of the same name */
    {"out", "amplified", INFINITY, 2.0},
};

static void
key_init(struct srv_diff_key *key)
{
    key->a = RUN_A;
    key->b = RUN_B;
    key->truth = "";
    key->atol = 1e-8;
    key->rtol = 1e-5;
    key->engine_version = "1.0";
}

static void
put(struct srv_db *db, const struct srv_diff_key *key, const char *json)
{
    struct srv_diff_row row = {"fc", 4, sums, json, 0.25, 0};
    struct gd_err err;
    ck_assert_msg(srv_db_diff_put(db, key, &row, 100, &err) == 0, "%s", err.msg);
}

START_TEST(json_back_as_stored)
{
    struct srv_db *db = fresh_db();
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    struct srv_diff_key key;
    key_init(&key);
    struct gd_err err;
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(srv_db_diff_json(db, &key, &text, &len, &err), SRV_ENOTFOUND);
    const char *json =
        "{\"a\":{\"id\":\"x\"},\"layers\":[{\"max_abs\":0.25}],\"\\u00e9\":\"\xc3\xa9\"}";
    put(db, &key, json);
    ck_assert_int_eq(srv_db_diff_json(db, &key, &text, &len, &err), 0);
    ck_assert_uint_eq(len, strlen(json) + 1);
    ck_assert_int_eq(memcmp(text, json, strlen(json)), 0);
    ck_assert_str_eq(text + strlen(json), "\n");
    free(text);

    /* The first write of a key stays; a second one changes nothing. */
    put(db, &key, "{\"other\":true}");
    ck_assert_int_eq(srv_db_diff_json(db, &key, &text, &len, &err), 0);
    ck_assert_int_eq(memcmp(text, json, strlen(json)), 0);
    free(text);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_layers"), 4);
    drop_db(db);
}
END_TEST

/* locate: the row and the byte length (the UTF-8 counts in bytes); the text only when it
 * is at most inline_max bytes, then the same text srv_db_diff_json gives; pieces read by
 * row give the same bytes. */
START_TEST(locate_inline_or_by_row)
{
    struct srv_db *db = fresh_db();
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    struct srv_diff_key key;
    key_init(&key);
    struct gd_err err;
    char *text = NULL;
    size_t len = 0;
    int64_t row = 0;
    uint64_t size = 0;
    ck_assert_int_eq(srv_db_diff_locate(db, &key, 1000, &row, &size, &text, &len, &err),
                     SRV_ENOTFOUND);
    ck_assert_ptr_null(text);
    const char *json = "{\"layers\":[{\"name\":\"caf\xc3\xa9\"}]}";
    size_t n = strlen(json);
    put(db, &key, json);
    ck_assert_int_eq(srv_db_diff_locate(db, &key, n, &row, &size, &text, &len, &err), 0);
    ck_assert_uint_eq(size, n);
    ck_assert_int_gt(row, 0);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(len, n + 1);
    ck_assert_int_eq(memcmp(text, json, n), 0);
    ck_assert_str_eq(text + n, "\n");
    free(text);
    text = NULL;
    ck_assert_int_eq(srv_db_diff_locate(db, &key, n - 1, &row, &size, &text, &len, &err), 0);
    ck_assert_uint_eq(size, n);
    ck_assert_ptr_null(text);
    char buf[64] = {0};
    ck_assert_msg(srv_db_diff_read(db, row, size, 7, buf, n - 7, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(memcmp(buf, json + 7, n - 7), 0);
    drop_db(db);
}
END_TEST

START_TEST(every_part_of_the_key)
{
    struct srv_db *db = fresh_db();
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    add_run(db, RUN_T);
    struct srv_diff_key key;
    key_init(&key);
    put(db, &key, "{}");
    struct gd_err err;
    char *text = NULL;
    size_t len = 0;
    struct srv_diff_key other[6];
    for (int i = 0; i < 6; i++)
        key_init(&other[i]);
    other[0].a = RUN_B; /* b against a is another diff: b is the reference side */
    other[0].b = RUN_A;
    other[1].truth = RUN_T;
    other[2].atol = 1e-7;
    other[3].rtol = 1e-4;
    other[4].engine_version = "1.1";
    other[5].atol = 1e-8 * (1 + 1e-15); /* not the same double */
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(srv_db_diff_json(db, &other[i], &text, &len, &err) == SRV_ENOTFOUND,
                      "key %d found", i);
        put(db, &other[i], "{\"n\":1}");
        ck_assert_int_eq(srv_db_diff_json(db, &other[i], &text, &len, &err), 0);
        ck_assert_str_eq(text, "{\"n\":1}\n");
        free(text);
    }
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 7);
    drop_db(db);
}
END_TEST

START_TEST(summaries)
{
    struct srv_db *db = fresh_db();
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    struct srv_diff_key key;
    key_init(&key);
    struct gd_err err;
    struct srv_diff_summary sum;
    ck_assert_int_eq(srv_db_diff_summary(db, &key, NULL, &sum, &err), SRV_ENOTFOUND);
    put(db, &key, "{}");

    ck_assert_int_eq(srv_db_diff_summary(db, &key, "fc", &sum, &err), 0);
    ck_assert_int_eq(sum.layer_found, 1);
    ck_assert_str_eq(sum.verdict, "divergent"); /* the first layer named fc */
    ck_assert(sum.err == 0.5);
    ck_assert(sum.max_abs == 0.25);
    ck_assert_int_eq(sum.has_first, 1);
    ck_assert_str_eq(sum.first_divergent, "fc");

    ck_assert_int_eq(srv_db_diff_summary(db, &key, NULL, &sum, &err), 0);
    ck_assert_str_eq(sum.verdict, "amplified"); /* the last layer */
    ck_assert(isnan(sum.err));                  /* stored as null */
    ck_assert(sum.max_abs == 2.0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_layers WHERE idx = 3 AND err IS NULL"),
                     1);

    ck_assert_int_eq(srv_db_diff_summary(db, &key, "nosuch", &sum, &err), 0);
    ck_assert_int_eq(sum.layer_found, 0);
    ck_assert_int_eq(sum.has_first, 1);

    /* No first divergent layer: NULL in, has_first 0 out. */
    struct srv_diff_key k2;
    key_init(&k2);
    k2.rtol = 0;
    struct srv_diff_row row = {NULL, 1, sums, "{}", 0.1, 0};
    ck_assert_int_eq(srv_db_diff_put(db, &k2, &row, 100, &err), 0);
    ck_assert_int_eq(srv_db_diff_summary(db, &k2, NULL, &sum, &err), 0);
    ck_assert_int_eq(sum.has_first, 0);
    ck_assert_str_eq(sum.verdict, "identical");
    ck_assert(sum.err == 0 && sum.max_abs == 0);
    drop_db(db);
}
END_TEST

START_TEST(rows_go_with_their_runs)
{
    struct srv_db *db = fresh_db();
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    add_run(db, RUN_T);
    struct srv_diff_key key;
    key_init(&key);
    put(db, &key, "{}");
    key.truth = RUN_T;
    put(db, &key, "{}");
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 2);
    sqlite3 *c = srv_db_conn(db);
    /* The truth run is no foreign key ('' means none): a trigger removes its diffs. */
    ck_assert_int_eq(sqlite3_exec(c, "DELETE FROM runs WHERE id LIKE '3333%'", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_layers"), 4);
    ck_assert_int_eq(sqlite3_exec(c, "DELETE FROM runs WHERE id LIKE '2222%'", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_layers"), 0);
    drop_db(db);
}
END_TEST

/* A counter or gauge of /metrics, as rendered. */
static long long
metric(struct srv_db *db, const char *name)
{
    struct srv_buf out = {0};
    struct gd_err err;
    ck_assert_msg(srv_metrics_render(db, &out, &err) == 0, "%s", err.msg);
    srv_buf_append(&out, "", 1);
    char want[128];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = strstr(out.data, want);
    ck_assert_msg(at != NULL, "no %s in /metrics", name);
    long long v = strtoll(at + strlen(want), NULL, 10);
    srv_buf_fini(&out);
    return v;
}

static int
cached(struct srv_db *db, const struct srv_diff_key *key)
{
    char *text = NULL;
    size_t len = 0;
    struct gd_err err;
    int rc = srv_db_diff_json(db, key, &text, &len, &err);
    ck_assert_msg(rc == 0 || rc == SRV_ENOTFOUND, "%s", err.msg);
    free(text);
    return rc == 0;
}

START_TEST(cap_drops_least_recent)
{
    struct srv_db *db = fresh_db();
    struct gd_err err;
    add_run(db, RUN_A);
    add_run(db, RUN_B);
    ck_assert_int_eq(srv_db_diff_touch_flush(db, 0, &err), 0); /* reads of other tests */
    char json[1001];
    memset(json, 'x', 1000);
    json[0] = '"';
    json[999] = '"';
    json[1000] = '\0';
    /* One row: 1000 bytes of text, 128 of row, one layer of name "x" and verdict "noise". */
    const struct srv_diff_layer_sum one[] = {{"x", "noise", 0.0, 0.0}};
    int64_t row_bytes = 1000 + 128 + 1 + 5 + 48;
    int64_t cap = 3 * row_bytes + 10;
    struct srv_diff_key d1, k[5];
    key_init(&d1);
    for (int i = 0; i < 5; i++) {
        key_init(&k[i]);
        k[i].atol = 1e-3 / (i + 1); /* tolerances other than the defaults */
    }
    long long ev0 = metric(db, "gpudiffd_diff_cache_evictions_total");
    struct srv_diff_row row = {NULL, 1, one, json, 0.1, cap};
    ck_assert_int_eq(srv_db_diff_put(db, &d1, &row, 10, &err), 0);
    ck_assert_int_eq(srv_db_diff_put(db, &k[0], &row, 11, &err), 0);
    ck_assert_int_eq(srv_db_diff_put(db, &k[1], &row, 12, &err), 0);
    ck_assert_int_eq(metric(db, "gpudiffd_diff_cache_bytes"), 3 * row_bytes);
    ck_assert_int_eq(metric(db, "gpudiffd_diff_cache_entries"), 3);
    /* Full: the oldest of the other tolerances goes, not the older default one. */
    ck_assert_int_eq(srv_db_diff_put(db, &k[2], &row, 13, &err), 0);
    ck_assert(cached(db, &d1) && !cached(db, &k[0]) && cached(db, &k[2]));
    ck_assert_int_eq(metric(db, "gpudiffd_diff_cache_evictions_total") - ev0, 1);
    ck_assert_int_le(metric(db, "gpudiffd_diff_cache_bytes"), cap);
    /* A read is a use: after the reads above are applied (at 14), k[1] is read again, so
     * at the next write k[1] is newer than k[2], which goes. */
    ck_assert_int_eq(srv_db_diff_touch_flush(db, 14, &err), 0);
    ck_assert(cached(db, &k[1]));
    ck_assert_int_eq(srv_db_diff_put(db, &k[3], &row, 20, &err), 0);
    ck_assert(cached(db, &k[1]) && !cached(db, &k[2]) && cached(db, &k[3]) && cached(db, &d1));
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 3);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diff_layers"), 3); /* theirs went too */
    /* Defaults go last, but they go: three more default keys (other engine versions). */
    struct srv_diff_key dv[3];
    const char *versions[] = {"2.0", "3.0", "4.0"};
    for (int i = 0; i < 3; i++) {
        key_init(&dv[i]);
        dv[i].engine_version = versions[i];
        ck_assert_int_eq(srv_db_diff_put(db, &dv[i], &row, 30 + i, &err), 0);
    }
    ck_assert(!cached(db, &k[1]) && !cached(db, &k[3]) && !cached(db, &d1));
    ck_assert(cached(db, &dv[0]) && cached(db, &dv[1]) && cached(db, &dv[2]));
    ck_assert_int_eq(metric(db, "gpudiffd_diff_cache_evictions_total") - ev0, 5);
    ck_assert_int_le(metric(db, "gpudiffd_diff_cache_bytes"), cap);
    /* Larger than the whole cap: computed, served, not stored; nothing is dropped for it. */
    long long un0 = metric(db, "gpudiffd_diff_cache_uncached_total");
    struct srv_diff_row big = {NULL, 1, one, json, 0.1, row_bytes - 1};
    ck_assert_int_eq(srv_db_diff_put(db, &k[4], &big, 40, &err), 0);
    ck_assert(!cached(db, &k[4]));
    ck_assert_int_eq(metric(db, "gpudiffd_diff_cache_uncached_total") - un0, 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM diffs"), 3);
    ck_assert_int_eq(srv_db_diff_touch_flush(db, 50, &err), 0);
    drop_db(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db_diffs");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, json_back_as_stored);
    tcase_add_test(tc, locate_inline_or_by_row);
    tcase_add_test(tc, every_part_of_the_key);
    tcase_add_test(tc, summaries);
    tcase_add_test(tc, rows_go_with_their_runs);
    tcase_add_test(tc, cap_drops_least_recent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
