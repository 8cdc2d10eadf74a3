/*
 * check_compare.c: server/compare.c, the comparison service, over a real database: stored
 * runs are compared layer by layer with values worked out by hand (max |a-b|, where, the
 * verdicts of an identical and a different layer, the first divergent one); the second
 * request is a cache hit with the same text; unknown, unfinished and trimmed runs give 404,
 * 409 and 410 and cache nothing; eight threads asking for one new diff compute it once; the
 * worker compares a finished run with the baseline without being asked, takes the jobs a
 * stopped service left in compare_jobs, and stops cleanly.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "gpudiff/session.h"
#include "blob.h"
#include "compare.h"
#include "db.h"
#include "db_fixture.h"
#include "run_doc.h"

/*
 * The worker runs on its own thread: waits for it poll every 10 ms and give up only after
 * 120 s, to end a hung test. A sanitized build on a busy 2-core machine takes seconds.
 */
#define WAIT_TICKS 12000

static char db_path[64];
static struct srv_store *store;

static const char *RUN_A = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
static const char *RUN_B = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
static const char *RUN_C = "cccccccc-cccc-4ccc-8ccc-cccccccccccc";

/* Two layers: "same" equal in every run, "out" with the given four values. */
static const float same[4] = {1, 2, 3, 4};

static int
fd_sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    (void)err;
    return write(*(int *)user, data, len) == (ssize_t)len ? 0 : GD_EIO;
}

static void
commit_layer(struct srv_db *db, const char *id, int index, const float *data)
{
    struct gd_err err;
    char sha[65], path[] = "/tmp/check_compare_spill.XXXXXX";
    ck_assert_int_eq(gd_sha256_hex(data, 16, sha, &err), 0);
    int fd = mkstemp(path);
    unlink(path);
    struct srv_blob_enc *enc = NULL;
    uint64_t stored = 0;
    ck_assert_int_eq(srv_blob_enc_new(4, 16, 3, fd_sink, &fd, &enc, &err), 0);
    ck_assert_int_eq(srv_blob_enc_write(enc, data, 16, &err), 0);
    ck_assert_int_eq(srv_blob_enc_finish(enc, &stored, &err), 0);
    srv_blob_enc_free(enc);
    struct srv_blob_spill spill = {fd, "float32", 4, 16, stored, SRV_BLOB_CODEC};
    int was_stored = 0, was_present = 0;
    ck_assert_msg(
        srv_db_layer_commit(db, id, index, sha, &spill, 10, &was_stored, &was_present, &err) == 0,
        "%s", err.msg);
    close(fd);
}

/* Stores a run of model m with the layers "same" and "out"; finished when finish is 1. */
static void
add_run(const char *id, const char *created_at, const float out[4], int finish)
{
    char sha_same[65], sha_out[65], text[2048];
    struct gd_err err;
    ck_assert_int_eq(gd_sha256_hex(same, 16, sha_same, &err), 0);
    ck_assert_int_eq(gd_sha256_hex(out, 16, sha_out, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\",\"created_at\":\"%s\","
             "\"model\":{\"name\":\"m\",\"sha256\":null},\"backend\":\"cpu\","
             "\"knobs\":{\"emulate\":\"none\",\"batch\":null},\"layers\":["
             "{\"index\":0,\"name\":\"same\",\"op\":\"Relu\",\"dtype\":\"float32\",\"shape\":[4],"
             "\"file\":\"layers/0000-same.npy\",\"sha256\":\"%s\",\"reduction_len\":1,"
             "\"discontinuous\":false},"
             "{\"index\":1,\"name\":\"out\",\"op\":\"Gemm\",\"dtype\":\"float32\",\"shape\":[2,2],"
             "\"file\":\"layers/0001-out.npy\",\"sha256\":\"%s\",\"reduction_len\":4,"
             "\"discontinuous\":false,\"inputs\":[\"same\"]}]}",
             id, created_at, sha_same, sha_out);
    struct srv_run_doc doc;
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, &doc, &err) == 0, "%s", err.msg);
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    int created = 0;
    ck_assert_msg(srv_db_run_create(db, &doc, 1, &created, &err) == 0, "%s", err.msg);
    srv_run_doc_fini(&doc);
    struct srv_layer_spec spec;
    ck_assert_int_eq(srv_db_layer_spec(db, id, 0, &spec, &err), 0);
    if (!spec.present)
        commit_layer(db, id, 0, same);
    ck_assert_int_eq(srv_db_layer_spec(db, id, 1, &spec, &err), 0);
    if (!spec.present)
        commit_layer(db, id, 1, out);
    if (finish)
        ck_assert_msg(srv_db_run_finish(db, id, 20, &err) == 0, "%s", err.msg);
    srv_store_release(store, db);
}

static void
setup(void)
{
    dbf_temp(db_path, sizeof db_path, "check_compare");
    struct srv_db_opts opts = {.busy_timeout_ms = 5000};
    struct gd_err err;
    ck_assert_msg(srv_store_open(db_path, &opts, &store, &err) == 0, "%s", err.msg);
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_msg(srv_db_migrate(db, NULL, NULL, &err) == 0, "%s", err.msg);
    srv_store_release(store, db);
    static const float out_a[4] = {0.5f, 1.0f, 2.0f, 4.0f};
    static const float out_b[4] = {0.5f, 1.0f, 2.0f, 4.25f}; /* differs at [1][1] by 0.25 */
    add_run(RUN_A, "2026-01-01T00:00:00Z", out_a, 1);
    add_run(RUN_B, "2026-01-02T00:00:00Z", out_b, 1);
}

static void
teardown(void)
{
    srv_store_close(store);
    dbf_remove(db_path);
}

static int64_t
count_rows(const char *sql)
{
    struct srv_db *db = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    srv_store_release(store, db);
    return n;
}

static int64_t
diffs_cached(void)
{
    return count_rows("SELECT count(*) FROM diffs");
}

static int64_t
jobs_queued(void)
{
    return count_rows("SELECT count(*) FROM compare_jobs");
}

START_TEST(a_diff_and_its_cache)
{
    struct srv_compare *c = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    struct srv_diff_key key;
    srv_diff_key_default(&key, RUN_A, RUN_B);
    char *text = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    int hit = -1;
    ck_assert_msg(srv_compare_json(c, &key, &text, &len, &hit, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(hit, 0);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_int_eq(text[len - 1], '\n');
    json_error_t jerr;
    json_t *d = json_loads(text, 0, &jerr);
    ck_assert_msg(d != NULL, "%s", jerr.text);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "a"), "id")), RUN_A);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "b"), "id")), RUN_B);
    ck_assert(json_is_null(json_object_get(d, "truth")));
    ck_assert(json_real_value(json_object_get(d, "atol")) == 1e-8);
    json_t *layers = json_object_get(d, "layers");
    ck_assert_int_eq(json_array_size(layers), 2);
    json_t *l0 = json_array_get(layers, 0), *l1 = json_array_get(layers, 1);
    ck_assert_str_eq(json_string_value(json_object_get(l0, "verdict")), "identical");
    ck_assert(json_number_value(json_object_get(l0, "max_abs")) == 0);
    /* 4.0 against 4.25: |a-b| = 0.25 at flat index 3, relative to max |b| 4.25. */
    ck_assert(json_number_value(json_object_get(l1, "max_abs")) == 0.25);
    ck_assert_int_eq(json_integer_value(json_object_get(l1, "max_abs_index")), 3);
    ck_assert(fabs(json_number_value(json_object_get(l1, "err")) - 0.25 / 4.25) < 1e-15);
    ck_assert_str_eq(json_string_value(json_object_get(l1, "verdict")), "divergent");
    ck_assert_str_eq(json_string_value(json_object_get(d, "first_divergent")), "out");
    ck_assert_int_eq(json_integer_value(json_object_get(l1, "mismatch_rows")), 1);
    json_decref(d);

    ck_assert_int_eq(srv_compare_json(c, &key, &again, &len2, &hit, &err), 0);
    ck_assert_int_eq(hit, 1);
    ck_assert_uint_eq(len, len2);
    ck_assert_str_eq(text, again);
    free(text);
    free(again);

    /* The summary the matrix reads: the last layer. */
    struct srv_db *db = NULL;
    struct srv_diff_summary sum;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_diff_summary(db, &key, NULL, &sum, &err), 0);
    srv_store_release(store, db);
    ck_assert_str_eq(sum.verdict, "divergent");
    ck_assert(sum.max_abs == 0.25);
    ck_assert_str_eq(sum.first_divergent, "out");
    ck_assert_int_eq(diffs_cached(), 1);
    srv_compare_stop(c);
}
END_TEST

START_TEST(runs_that_cannot_be_compared)
{
    struct srv_compare *c = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    static const float out_c[4] = {0, 0, 0, 0};
    add_run(RUN_C, "2026-01-03T00:00:00Z", out_c, 0);
    struct srv_diff_key key;
    char *text = NULL;
    size_t len = 0;
    srv_diff_key_default(&key, RUN_A, "dddddddd-dddd-4ddd-8ddd-dddddddddddd");
    ck_assert_int_eq(srv_compare_json(c, &key, &text, &len, NULL, &err), SRV_ENOTFOUND);
    srv_diff_key_default(&key, RUN_C, RUN_A);
    ck_assert_int_eq(srv_compare_json(c, &key, &text, &len, NULL, &err), SRV_ECONFLICT);
    ck_assert_msg(strstr(err.msg, "still uploading") != NULL, "%s", err.msg);
    srv_diff_key_default(&key, RUN_A, RUN_B);
    key.truth = RUN_C;
    ck_assert_int_eq(srv_compare_json(c, &key, &text, &len, NULL, &err), SRV_ECONFLICT);
    /* Retention dropped B's tensors: nothing to compare it with any more. */
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db),
                                  "UPDATE runs SET trimmed_at = 1 WHERE id "
                                  "LIKE 'bbbb%'",
                                  0, 0, 0),
                     SQLITE_OK);
    srv_store_release(store, db);
    srv_diff_key_default(&key, RUN_A, RUN_B);
    ck_assert_int_eq(srv_compare_ensure(c, &key, NULL, &err), SRV_EGONE);
    ck_assert_int_eq(diffs_cached(), 0);
    srv_compare_stop(c);
}
END_TEST

struct asker {
    struct srv_compare *c;
    int rc, hit;
    char *text;
};

static void *
ask(void *arg)
{
    struct asker *a = arg;
    struct srv_diff_key key;
    struct gd_err err;
    size_t len;
    srv_diff_key_default(&key, RUN_B, RUN_A);
    a->rc = srv_compare_json(a->c, &key, &a->text, &len, &a->hit, &err);
    return NULL;
}

START_TEST(one_computation_for_many_askers)
{
    struct srv_compare *c = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    struct srv_buf before = {0}, after = {0};
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_metrics_render(db, &before, &err), 0);
    srv_store_release(store, db);

    enum { N = 8 };
    pthread_t t[N];
    struct asker a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (struct asker){c, -1, -1, NULL};
        ck_assert_int_eq(pthread_create(&t[i], NULL, ask, &a[i]), 0);
    }
    int computed = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].rc, 0);
        computed += !a[i].hit;
        ck_assert_str_eq(a[i].text, a[0].text);
    }
    for (int i = 0; i < N; i++)
        free(a[i].text);
    ck_assert_int_eq(computed, 1);
    ck_assert_int_eq(diffs_cached(), 1);

    /* /metrics counted one more computation and one more miss, the others as hits. */
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_metrics_render(db, &after, &err), 0);
    srv_store_release(store, db);
    long long c0, c1, m0, m1, h0, h1;
    const char *p;
    p = strstr(before.data, "gpudiffd_compare_duration_seconds_count ");
    c0 = atoll(p + strlen("gpudiffd_compare_duration_seconds_count "));
    p = strstr(after.data, "gpudiffd_compare_duration_seconds_count ");
    c1 = atoll(p + strlen("gpudiffd_compare_duration_seconds_count "));
    p = strstr(before.data, "\ngpudiffd_diff_cache_misses_total ");
    m0 = atoll(p + strlen("\ngpudiffd_diff_cache_misses_total "));
    p = strstr(after.data, "\ngpudiffd_diff_cache_misses_total ");
    m1 = atoll(p + strlen("\ngpudiffd_diff_cache_misses_total "));
    p = strstr(before.data, "\ngpudiffd_diff_cache_hits_total ");
    h0 = atoll(p + strlen("\ngpudiffd_diff_cache_hits_total "));
    p = strstr(after.data, "\ngpudiffd_diff_cache_hits_total ");
    h1 = atoll(p + strlen("\ngpudiffd_diff_cache_hits_total "));
    ck_assert_int_eq(c1 - c0, 1);
    ck_assert_int_eq(m1 - m0, 1);
    ck_assert_int_eq(h1 - h0, N - 1);
    srv_buf_fini(&before);
    srv_buf_fini(&after);
    srv_compare_stop(c);
}
END_TEST

START_TEST(worker_compares_with_the_baseline)
{
    struct srv_compare *c = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_baseline_set(db, "m", RUN_B, 0, 30, &err), 0);
    srv_store_release(store, db);
    /* A finished run: compared with B. The baseline itself: compared with nothing. */
    static const float out_c[4] = {0.5f, 1.0f, 2.0f, 4.0f};
    add_run(RUN_C, "2026-01-03T00:00:00Z", out_c, 1);
    srv_compare_run_finished(c, RUN_B);
    srv_compare_run_finished(c, RUN_C);
    struct srv_diff_key key;
    srv_diff_key_default(&key, RUN_C, RUN_B);
    struct srv_diff_summary sum;
    int rc = SRV_ENOTFOUND;
    for (int i = 0; i < WAIT_TICKS && rc == SRV_ENOTFOUND; i++) {
        ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
        rc = srv_db_diff_summary(db, &key, "out", &sum, &err);
        srv_store_release(store, db);
        if (rc == SRV_ENOTFOUND)
            usleep(10000);
    }
    ck_assert_msg(rc == 0, "the worker did not compare C with the baseline: %s", err.msg);
    ck_assert(sum.max_abs == 0.25);
    /* Setting B as the baseline queued A against it too (A was complete). */
    for (int i = 0; i < WAIT_TICKS && diffs_cached() < 2; i++)
        usleep(10000);
    ck_assert_int_eq(diffs_cached(), 2);

    /* A new baseline: the model's other complete runs are compared with it. */
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_baseline_set(db, "m", RUN_A, 0, 40, &err), 0);
    srv_store_release(store, db);
    srv_compare_baseline_set(c, "m");
    srv_diff_key_default(&key, RUN_B, RUN_A);
    rc = SRV_ENOTFOUND;
    for (int i = 0; i < WAIT_TICKS && diffs_cached() < 4; i++)
        usleep(10000);
    ck_assert_int_eq(diffs_cached(), 4);
    ck_assert_int_eq(jobs_queued(), 0);
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_diff_summary(db, &key, NULL, &sum, &err), 0);
    srv_diff_key_default(&key, RUN_C, RUN_A);
    ck_assert_int_eq(srv_db_diff_summary(db, &key, NULL, &sum, &err), 0);
    ck_assert_str_eq(sum.verdict, "identical");
    srv_store_release(store, db);
    srv_compare_stop(c);
}
END_TEST

START_TEST(jobs_outlive_the_service)
{
    /* Jobs written while no service runs (a daemon killed before it compared them)... */
    struct gd_err err;
    struct srv_db *db = NULL;
    static const float out_c[4] = {0.5f, 1.0f, 2.0f, 4.0f};
    add_run(RUN_C, "2026-01-03T00:00:00Z", out_c, 1);
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_baseline_set(db, "m", RUN_A, 0, 30, &err), 0);
    srv_store_release(store, db);
    ck_assert_int_eq(jobs_queued(), 2);
    ck_assert_int_eq(diffs_cached(), 0);
    /* ...are done by the next one, unasked. */
    struct srv_compare *c = NULL;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    for (int i = 0; i < WAIT_TICKS && jobs_queued() > 0; i++)
        usleep(10000);
    ck_assert_int_eq(jobs_queued(), 0);
    ck_assert_int_eq(diffs_cached(), 2);
    srv_compare_stop(c);
}
END_TEST

START_TEST(stop_with_work_queued)
{
    struct srv_compare *c = NULL;
    struct gd_err err;
    ck_assert_int_eq(srv_compare_start(store, NULL, &c, &err), 0);
    struct srv_db *db = NULL;
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    ck_assert_int_eq(srv_db_baseline_set(db, "m", RUN_A, 0, 30, &err), 0);
    srv_store_release(store, db);
    for (int i = 0; i < 2000; i++)
        srv_compare_run_finished(c, RUN_B);
    srv_compare_stop(c); /* joins: returns only once the worker is gone */
    srv_compare_stop(NULL);
    srv_compare_run_finished(NULL, RUN_B);
}
END_TEST

int
main(void)
{
    srv_log_init(GD_LOG_ERROR);
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("service");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_diff_and_its_cache);
    tcase_add_test(tc, runs_that_cannot_be_compared);
    tcase_add_test(tc, one_computation_for_many_askers);
    tcase_add_test(tc, worker_compares_with_the_baseline);
    tcase_add_test(tc, jobs_outlive_the_service);
    tcase_add_test(tc, stop_with_work_queued);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
