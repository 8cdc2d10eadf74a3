/*
 * check_db.c: server/db.c and the db_*.c files: migrations from an empty file, a second run
 * that changes nothing, user_version, the connection's pragmas; and a run's life in storage:
 * created, refused to finish while layers miss, layers committed (the second one sharing
 * the first one's blob), finished, idempotent re-creation, conflicts, linking of known data,
 * listing, reading a blob back, retention.
 */
#include <check.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpudiff/hash.h"
#include "blob.h"
#include "db.h"
#include "db_fixture.h"
#include "run_doc.h"

static char db_path[64];

static struct srv_db *
fresh_db(int sync_full)
{
    return dbf_open(db_path, sizeof db_path, "check_db", sync_full, 0);
}

static void
drop_db(struct srv_db *db)
{
    srv_db_close(db);
    dbf_remove(db_path);
}

/* One text value of a query. */
static char *
query_text(struct srv_db *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(srv_db_conn(db), sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *out = strdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    return out;
}

START_TEST(migrate_from_empty)
{
    const int newest = srv_migrations[srv_migration_count - 1].version;
    struct srv_db *db = fresh_db(0);
    struct gd_err err;
    int v = -1, from = -1, to = -1;
    ck_assert_int_eq(srv_db_version(db, &v, &err), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_msg(srv_db_migrate(db, &from, &to, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(from, 0);
    ck_assert_int_eq(to, newest);
    ck_assert_int_eq(srv_db_version(db, &v, &err), 0);
    ck_assert_int_eq(v, newest);
    char *tables = query_text(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM "
                                  "sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                  "'sqlite_%' ORDER BY name)");
    ck_assert_str_eq(tables, "baselines,blobs,compare_jobs,diff_layers,"
                             /* web: migration 013 */
                             "diff_view_layers,diff_views,"
                             "diffs,"
                             /* jobsrv: migration 011 */
                             "fleet_agents,fleet_devices,fleet_files,fleet_jobs,fleet_leases,"
                             "fleet_tasks,"
                             "layer_requests,layers,matrix_cache,"
                             "models,runs,sweep_runs,sweeps,tokens");
    free(tables);

    /* Again: nothing to do, nothing changed. */
    char *schema = query_text(db, "SELECT group_concat(sql, ';') FROM sqlite_master");
    ck_assert_int_eq(srv_db_migrate(db, &from, &to, &err), 0);
    ck_assert_int_eq(from, newest);
    ck_assert_int_eq(to, newest);
    char *again = query_text(db, "SELECT group_concat(sql, ';') FROM sqlite_master");
    ck_assert_str_eq(schema, again);
    free(schema);
    free(again);

    /* The embedded files are numbered from 1, increasing (a number owned by a change not
       merged yet may be missing). */
    ck_assert_int_eq(srv_migrations[0].version, 1);
    for (int i = 1; i < srv_migration_count; i++)
        ck_assert_int_gt(srv_migrations[i].version, srv_migrations[i - 1].version);
    ck_assert_str_eq(srv_migrations[0].name, "init");
    drop_db(db);
}
END_TEST

/* Migrations 002 and 023 give runs stored under schema 1 the device key new runs get at POST
 * (knobs.def's spelling: tf32=on for the true older agents wrote). */
START_TEST(migrate_device_keys)
{
    struct srv_db *db = fresh_db(0);
    struct gd_err err;
    sqlite3 *c = srv_db_conn(db);
    ck_assert_int_eq(sqlite3_exec(c, srv_migrations[0].sql, 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(c,
                                  "PRAGMA user_version=1;"
                                  "INSERT INTO models(id, name, created_at) VALUES(1, 'm', 0);"
                                  "INSERT INTO runs(id, model_id, model_sha256, backend, "
                                  "created_at, created_ts, state, received_at, n_layers, "
                                  "content_sha256, meta) VALUES"
                                  "('r1', 1, '', 'cuda', '', 0, 'complete', 0, 0, '', "
                                  "'{\"backend\":\"cuda\",\"env\":{\"gpu_name\":\"G\"},"
                                  "\"knobs\":{\"tf32\":true}}'),"
                                  "('r2', 1, '', 'cpu', '', 0, 'complete', 0, 0, '', "
                                  "'{\"backend\":\"cpu\",\"knobs\":{\"emulate\":\"none\"}}'),"
                                  "('r3', 1, '', 'cpu', '', 0, 'complete', 0, 0, '', 'not json')",
                                  0, 0, 0),
                     SQLITE_OK);
    int from = 0, to = 0;
    ck_assert_msg(srv_db_migrate(db, &from, &to, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(from, 1);
    ck_assert_int_eq(to, srv_migrations[srv_migration_count - 1].version);
    char *keys = query_text(db, "SELECT group_concat(id || '=' || device, ';') FROM "
                                "(SELECT id, device FROM runs ORDER BY id)");
    ck_assert_str_eq(keys, "r1=cuda G tf32=on;r2=cpu;r3=");
    free(keys);
    drop_db(db);
}
END_TEST

/*
 * The pool's connections leave checkpoints to the store's checkpointer thread: a commit of
 * 8 MiB (2048 WAL pages, over the 1000 that call for one) reaches the database file soon
 * after, with nothing else done.
 */
START_TEST(checkpoints_in_the_background)
{
    dbf_temp(db_path, sizeof db_path, "check_db");
    struct srv_db_opts opts = {.busy_timeout_ms = 1000};
    struct srv_store *store = NULL;
    struct srv_db *db = NULL;
    struct gd_err err;
    ck_assert_msg(srv_store_open(db_path, &opts, &store, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(srv_store_acquire(store, &db, &err), 0);
    sqlite3 *c = srv_db_conn(db);
    ck_assert_int_eq(sqlite3_exec(c, "CREATE TABLE t(b BLOB)", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(c, "INSERT INTO t VALUES(randomblob(8388608))", 0, 0, 0),
                     SQLITE_OK);
    srv_store_release(store, db);
    struct stat sb = {0};
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(stat(db_path, &sb), 0);
        if (sb.st_size >= 8388608)
            break;
        usleep(10000);
    }
    ck_assert_msg(sb.st_size >= 8388608, "the database file is %lld bytes: no checkpoint",
                  (long long)sb.st_size);
    srv_store_close(store);
    dbf_remove(db_path);
}
END_TEST

START_TEST(newer_database_refused)
{
    struct srv_db *db = fresh_db(0);
    struct gd_err err;
    ck_assert_int_eq(sqlite3_exec(srv_db_conn(db), "PRAGMA user_version=99", 0, 0, 0), SQLITE_OK);
    ck_assert_int_eq(srv_db_migrate(db, NULL, NULL, &err), GD_ENOTSUP);
    ck_assert_msg(strstr(err.msg, "99") != NULL, "%s", err.msg);
    drop_db(db);
}
END_TEST

START_TEST(pragmas)
{
    struct srv_db *db = fresh_db(0);
    char *mode = query_text(db, "PRAGMA journal_mode");
    char *fk = query_text(db, "PRAGMA foreign_keys");
    char *sync = query_text(db, "PRAGMA synchronous");
    ck_assert_str_eq(mode, "wal");
    ck_assert_str_eq(fk, "1");
    ck_assert_str_eq(sync, "1"); /* NORMAL */
    free(mode);
    free(fk);
    free(sync);
    drop_db(db);
    db = fresh_db(1);
    sync = query_text(db, "PRAGMA synchronous");
    ck_assert_str_eq(sync, "2"); /* FULL */
    free(sync);
    drop_db(db);
}
END_TEST

/* ---- a run's life ---- */

static const float layer_data[2] = {1.0f, 2.0f};

static void
make_doc(const char *id, const char *created_at, struct srv_run_doc *doc)
{
    char sha[65], text[2048];
    struct gd_err err;
    ck_assert_int_eq(gd_sha256_hex(layer_data, sizeof layer_data, sha, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\":\"gpudiff-run\",\"version\":1,\"id\":\"%s\",\"created_at\":\"%s\","
             "\"model\":{\"name\":\"m1\",\"sha256\":\"%064d\"},\"backend\":\"cpu\","
             "\"env\":{\"gpu_name\":\"Test GPU\"},\"layers\":["
             "{\"index\":0,\"name\":\"a\",\"op\":\"Relu\",\"dtype\":\"float32\",\"shape\":[2],"
             "\"file\":\"layers/0000-a.npy\",\"sha256\":\"%s\"},"
             "{\"index\":1,\"name\":\"b\",\"op\":\"Identity\",\"dtype\":\"float32\","
             "\"shape\":[1,2],\"file\":\"layers/0001-b.npy\",\"sha256\":\"%s\"}]}",
             id, created_at, 0, sha, sha);
    ck_assert_msg(srv_run_doc_parse(text, strlen(text), 1 << 20, doc, &err) == 0, "%s", err.msg);
}

static int
fd_sink(void *user, const void *data, size_t len, struct gd_err *err)
{
    (void)err;
    return write(*(int *)user, data, len) == (ssize_t)len ? 0 : GD_EIO;
}

struct blob_src {
    struct srv_db *db;
    struct srv_sql_piece_handle *handle;
    int64_t id;
    uint64_t off, size;
};

static int
db_source(void *user, void *buf, size_t cap, size_t *got, struct gd_err *err)
{
    struct blob_src *s = user;
    size_t n = s->size - s->off < cap ? (size_t)(s->size - s->off) : cap;
    *got = 0;
    if (n == 0)
        return 0;
    int rc = srv_db_blob_read(s->db, s->id, &s->handle, s->off, buf, n, err);
    s->off += n;
    *got = n;
    return rc;
}

static const char *RUN_A = "11111111-1111-4111-8111-111111111111";
static const char *RUN_B = "22222222-2222-4222-8222-222222222222";

START_TEST(run_life)
{
    struct srv_db *db = fresh_db(0);
    struct gd_err err;
    ck_assert_int_eq(srv_db_migrate(db, NULL, NULL, &err), 0);
    struct srv_run_doc a;
    make_doc(RUN_A, "2026-01-02T03:04:05Z", &a);
    int created = -1;
    ck_assert_msg(srv_db_run_create(db, &a, 1000, &created, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(created, 1);
    char *device = query_text(db, "SELECT device FROM runs");
    ck_assert_str_eq(device, "cpu Test GPU");
    free(device);

    ck_assert_int_eq(srv_db_run_finish(db, RUN_A, 1001, &err), SRV_EINCOMPLETE);
    ck_assert_msg(strstr(err.msg, "2 of 2") != NULL, "%s", err.msg);
    json_t *run = NULL;
    ck_assert_int_eq(srv_db_run_get(db, RUN_A, 0, &run, &err), SRV_ENOTFOUND);
    ck_assert_int_eq(srv_db_run_get(db, RUN_A, 1, &run, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(run, "state")), "uploading");
    ck_assert_int_eq(json_array_size(json_object_get(run, "layers_missing")), 2);
    json_decref(run);

    /* Layer 0 brings the data; layer 1 has the same bytes and shares the blob. */
    struct srv_layer_spec spec;
    ck_assert_int_eq(srv_db_layer_spec(db, RUN_A, 0, &spec, &err), 0);
    ck_assert_int_eq(spec.present, 0);
    ck_assert_int_eq(spec.blob_stored, 0);
    ck_assert_int_eq(spec.raw_size, 8);
    ck_assert_int_eq(srv_db_layer_spec(db, RUN_A, 2, &spec, &err), SRV_ENOTFOUND);
    char spill_path[] = "/tmp/check_db_spill.XXXXXX";
    int fd = mkstemp(spill_path);
    unlink(spill_path);
    struct srv_blob_enc *enc = NULL;
    uint64_t stored_size = 0;
    ck_assert_int_eq(srv_blob_enc_new(4, 8, 3, fd_sink, &fd, &enc, &err), 0);
    ck_assert_int_eq(srv_blob_enc_write(enc, layer_data, 8, &err), 0);
    ck_assert_int_eq(srv_blob_enc_finish(enc, &stored_size, &err), 0);
    srv_blob_enc_free(enc);
    struct srv_blob_spill spill = {fd, "float32", 4, 8, stored_size, SRV_BLOB_CODEC};
    int stored = -1, was_present = -1;
    const char *sha = a.layers[0].sha256;
    ck_assert_msg(
        srv_db_layer_commit(db, RUN_A, 0, sha, &spill, 1002, &stored, &was_present, &err) == 0,
        "%s", err.msg);
    ck_assert_int_eq(stored, 1);
    ck_assert_int_eq(was_present, 0);
    ck_assert_int_eq(srv_db_layer_spec(db, RUN_A, 1, &spec, &err), 0);
    ck_assert_int_eq(spec.blob_stored, 1);
    ck_assert_int_eq(
        srv_db_layer_commit(db, RUN_A, 1, sha, NULL, 1003, &stored, &was_present, &err), 0);
    ck_assert_int_eq(stored, 0);
    ck_assert_int_eq(was_present, 0);
    /* The same layer again: nothing changes. */
    ck_assert_int_eq(
        srv_db_layer_commit(db, RUN_A, 1, sha, NULL, 1004, &stored, &was_present, &err), 0);
    ck_assert_int_eq(was_present, 1);
    close(fd);
    int64_t blobs, raw, packed;
    ck_assert_int_eq(srv_db_blob_totals(db, &blobs, &raw, &packed, &err), 0);
    ck_assert_int_eq(blobs, 1);
    ck_assert_int_eq(raw, 8);
    ck_assert_int_eq(packed, (int64_t)stored_size);

    ck_assert_msg(srv_db_run_finish(db, RUN_A, 1005, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(srv_db_run_finish(db, RUN_A, 1006, &err), 0);
    ck_assert_int_eq(srv_db_run_get(db, RUN_A, 0, &run, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(run, "state")), "complete");
    ck_assert_int_eq(json_integer_value(json_object_get(run, "layers_present")), 2);
    json_decref(run);

    /* The same document again is the same run; other content under its id is refused. */
    ck_assert_int_eq(srv_db_run_create(db, &a, 2000, &created, &err), 0);
    ck_assert_int_eq(created, 0);
    struct srv_run_doc a2;
    make_doc(RUN_A, "2026-01-02T03:04:06Z", &a2);
    ck_assert_int_eq(srv_db_run_create(db, &a2, 2000, &created, &err), SRV_ECONFLICT);
    srv_run_doc_fini(&a2);

    /* A second run of the same tensors: linked to the stored blob at once. */
    struct srv_run_doc b;
    make_doc(RUN_B, "2026-01-03T00:00:00Z", &b);
    ck_assert_int_eq(srv_db_run_create(db, &b, 3000, &created, &err), 0);
    ck_assert_int_eq(created, 1);
    ck_assert_msg(srv_db_run_finish(db, RUN_B, 3001, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(srv_db_blob_totals(db, &blobs, &raw, &packed, &err), 0);
    ck_assert_int_eq(blobs, 1);

    struct srv_run_filter f = {.since = INT64_MIN, .limit = 50};
    json_t *list = NULL;
    ck_assert_int_eq(srv_db_runs_list(db, &f, &list, &err), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(list, "total")), 2);
    json_t *first = json_array_get(json_object_get(list, "runs"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "id")), RUN_B); /* newest */
    ck_assert_str_eq(json_string_value(json_object_get(first, "gpu")), "Test GPU");
    json_decref(list);
    f.model = "zzz";
    ck_assert_int_eq(srv_db_runs_list(db, &f, &list, &err), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(list, "total")), 0);
    json_decref(list);
    f.model = "m1";
    f.gpu = "Test GPU";
    f.since = 1767312000; /* 2026-01-02T00:00:00Z */
    f.limit = 1;
    f.offset = 1;
    ck_assert_int_eq(srv_db_runs_list(db, &f, &list, &err), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(list, "total")), 2);
    ck_assert_int_eq(json_array_size(json_object_get(list, "runs")), 1);
    first = json_array_get(json_object_get(list, "runs"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "id")), RUN_A);
    json_decref(list);

    /* The data reads back through the decoder. */
    struct srv_layer_loc loc;
    ck_assert_int_eq(srv_db_layer_locate(db, RUN_B, 1, 0, &loc, &err), 0);
    ck_assert_int_eq(loc.ndim, 2);
    ck_assert_int_eq(loc.shape[1], 2);
    struct blob_src src = {db, NULL, loc.blob_id, 0, loc.stored_size};
    struct srv_blob_dec *dec = NULL;
    float back[4] = {0};
    size_t got = 0;
    ck_assert_int_eq(srv_blob_dec_new(4, 8, db_source, &src, &dec, &err), 0);
    ck_assert_int_eq(srv_blob_dec_read(dec, back, sizeof back, &got, &err), 0);
    srv_blob_dec_free(dec);
    srv_db_blob_close(db, &src.handle);
    ck_assert_uint_eq(got, 8);
    ck_assert(back[0] == 1.0f && back[1] == 2.0f);

    /* And whole, as the comparison service loads it. */
    struct gd_tensor *t = NULL;
    ck_assert_msg(srv_db_layer_load(db, RUN_B, 1, 0, &t, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t->dtype, GD_F32);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], 1);
    ck_assert_int_eq(t->shape[1], 2);
    ck_assert(((float *)t->data)[0] == 1.0f && ((float *)t->data)[1] == 2.0f);
    gd_tensor_free(t);
    ck_assert_int_eq(srv_db_layer_load(db, RUN_B, 2, 0, &t, &err), SRV_ENOTFOUND);

    /* Retention past both runs: records stay, data goes. */
    int64_t trimmed, deleted, blobs_deleted;
    ck_assert_int_eq(
        srv_db_retention(db, srv_now() + 1000, &trimmed, &deleted, &blobs_deleted, &err), 0);
    ck_assert_int_eq(trimmed, 2);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(blobs_deleted, 1);
    ck_assert_int_eq(srv_db_layer_locate(db, RUN_A, 0, 0, &loc, &err), SRV_EGONE);
    ck_assert_int_eq(srv_db_run_get(db, RUN_A, 0, &run, &err), 0);
    ck_assert(json_is_string(json_object_get(run, "trimmed_at")));
    json_decref(run);
    char *fk = query_text(db, "SELECT count(*) FROM pragma_foreign_key_check");
    ck_assert_str_eq(fk, "0");
    free(fk);

    srv_run_doc_fini(&a);
    srv_run_doc_fini(&b);
    drop_db(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("db");
    TCase *tc = tcase_create("db");
    tcase_add_test(tc, migrate_from_empty);
    tcase_add_test(tc, migrate_device_keys);
    tcase_add_test(tc, newer_database_refused);
    tcase_add_test(tc, checkpoints_in_the_background);
    tcase_add_test(tc, pragmas);
    tcase_add_test(tc, run_life);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
