/*
 * db_diffs.c: the comparison cache: one diffs row per compared pair (the JSON text served as
 * it is) and its per-layer summaries in diff_layers, written together in one transaction;
 * read back as text for GET /api/v1/diff and as one layer's summary for the matrix and
 * history, which then never parse a diff's JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"

static const char SQL_DIFF_JSON[] =
    "SELECT json FROM diffs WHERE run_a = ?1 AND run_b = ?2 AND truth = ?3 AND atol = ?4 "
    "AND rtol = ?5 AND engine_version = ?6";
static const char SQL_DIFF_INSERT[] =
    "INSERT INTO diffs(run_a, run_b, truth, atol, rtol, engine_version, first_divergent, "
    "n_layers, json, seconds, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
    "ON CONFLICT DO NOTHING";
static const char SQL_DIFF_LAYER_INSERT[] =
    "INSERT INTO diff_layers(diff_id, idx, name, verdict, err, max_abs) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
/* The named layer (the first of that name), or with ?7 NULL the last one. */
static const char SQL_DIFF_SUMMARY[] =
    "SELECT d.first_divergent, l.verdict, l.err, l.max_abs, l.idx IS NOT NULL "
    "FROM diffs d LEFT JOIN diff_layers l ON l.diff_id = d.id AND "
    "l.idx = CASE WHEN ?7 IS NULL THEN d.n_layers - 1 ELSE (SELECT min(idx) FROM diff_layers "
    "WHERE diff_id = d.id AND name = ?7) END "
    "WHERE d.run_a = ?1 AND d.run_b = ?2 AND d.truth = ?3 AND d.atol = ?4 AND d.rtol = ?5 "
    "AND d.engine_version = ?6";

static void
bind_key(sqlite3_stmt *st, const struct srv_diff_key *key)
{
    srv_db_bind_text(st, 1, key->a);
    srv_db_bind_text(st, 2, key->b);
    srv_db_bind_text(st, 3, key->truth != NULL ? key->truth : "");
    sqlite3_bind_double(st, 4, key->atol);
    sqlite3_bind_double(st, 5, key->rtol);
    srv_db_bind_text(st, 6, key->engine_version);
}

int
srv_db_diff_json(struct srv_db *db, const struct srv_diff_key *key, char **text, size_t *len,
                 struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_DIFF_JSON, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached")
                              : srv_db_fail(db, s, "diff lookup", err);
        goto done;
    }
    const void *data = sqlite3_column_blob(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    char *copy = malloc(n + 2);
    if (copy == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for a diff of %zu bytes", n);
        goto done;
    }
    if (n > 0)
        memcpy(copy, data, n);
    copy[n] = '\n';
    copy[n + 1] = '\0';
    *text = copy;
    *len = n + 1;
done:
    srv_db_done(st);
    return rc;
}

static const char SQL_DIFF_ROW[] =
    "SELECT id FROM diffs WHERE run_a = ?1 AND run_b = ?2 AND truth = ?3 AND atol = ?4 "
    "AND rtol = ?5 AND engine_version = ?6";

int
srv_db_diff_locate(struct srv_db *db, const struct srv_diff_key *key, int64_t *row,
                   uint64_t *len, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_DIFF_ROW, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    int s = sqlite3_step(st);
    int64_t id = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    srv_db_done(st);
    if (s != SQLITE_ROW)
        return s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached")
                                : srv_db_fail(db, s, "diff lookup", err);
    /* The text's size in bytes, without reading it (incremental I/O sees TEXT as bytes). */
    sqlite3_blob *b = NULL;
    s = sqlite3_blob_open(srv_db_conn(db), "main", "diffs", "json", id, 0, &b);
    if (s != SQLITE_OK) {
        sqlite3_blob_close(b);
        return srv_db_fail(db, s, "diff open", err);
    }
    *len = (uint64_t)sqlite3_blob_bytes(b);
    *row = id;
    sqlite3_blob_close(b);
    return 0;
}

int
srv_db_diff_read(struct srv_db *db, int64_t row, uint64_t len, uint64_t off, void *buf, size_t n,
                 struct gd_err *err)
{
    sqlite3_blob *b = NULL;
    int s = sqlite3_blob_open(srv_db_conn(db), "main", "diffs", "json", row, 0, &b);
    if (s != SQLITE_OK) {
        sqlite3_blob_close(b);
        return srv_db_fail(db, s, "diff open", err);
    }
    int rc = 0;
    if ((uint64_t)sqlite3_blob_bytes(b) != len || off > len || n > len - off)
        rc = gd_err_set(err, GD_EIO, "cached diff %lld changed while it was sent", (long long)row);
    else if ((s = sqlite3_blob_read(b, buf, (int)n, (int)off)) != SQLITE_OK)
        rc = srv_db_fail(db, s, "diff read", err);
    sqlite3_blob_close(b);
    return rc;
}

static void
bind_number(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int
srv_db_diff_put(struct srv_db *db, const struct srv_diff_key *key, const struct srv_diff_row *row,
                int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_DIFF_INSERT, &st, err);
    if (rc != 0)
        goto done;
    bind_key(st, key);
    srv_db_bind_text(st, 7, row->first_divergent);
    sqlite3_bind_int(st, 8, row->n_layers);
    sqlite3_bind_text(st, 9, row->json, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 10, row->seconds);
    sqlite3_bind_int64(st, 11, now);
    int s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = srv_db_fail(db, s, "diff insert", err);
        goto done;
    }
    /* Another daemon on the same file cached it first: its row is as good as this one. */
    if (sqlite3_changes(srv_db_conn(db)) == 0)
        goto done;
    sqlite3_int64 id = sqlite3_last_insert_rowid(srv_db_conn(db));
    st = NULL;
    rc = srv_db_prepare(db, SQL_DIFF_LAYER_INSERT, &st, err);
    for (int i = 0; rc == 0 && i < row->n_layers; i++) {
        const struct srv_diff_layer_sum *l = &row->layers[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int(st, 2, i);
        srv_db_bind_text(st, 3, l->name);
        srv_db_bind_text(st, 4, l->verdict);
        bind_number(st, 5, l->err);
        bind_number(st, 6, l->max_abs);
        s = sqlite3_step(st);
        if (s != SQLITE_DONE)
            rc = srv_db_fail(db, s, "diff layer insert", err);
    }
    srv_db_done(st);
    if (rc == 0)
        rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}

int
srv_db_diff_summary(struct srv_db *db, const struct srv_diff_key *key, const char *layer,
                    struct srv_diff_summary *out, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_DIFF_SUMMARY, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    srv_db_bind_text(st, 7, layer);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached")
                              : srv_db_fail(db, s, "diff summary", err);
        goto done;
    }
    struct srv_diff_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.has_first = sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (sum.has_first)
        snprintf(sum.first_divergent, sizeof sum.first_divergent, "%s",
                 (const char *)sqlite3_column_text(st, 0));
    sum.layer_found = sqlite3_column_int(st, 4);
    snprintf(sum.verdict, sizeof sum.verdict, "%s",
             sum.layer_found ? (const char *)sqlite3_column_text(st, 1) : "");
    sum.err = sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2);
    sum.max_abs = sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3);
    *out = sum;
done:
    srv_db_done(st);
    return rc;
}
