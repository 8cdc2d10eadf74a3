/*
 * db_diffs.c: the comparison cache: one diffs row per compared pair (the JSON text served as
 * it is) and its per-layer summaries in diff_layers, written together in one transaction;
 * read back as text for GET /api/v1/diff and as one layer's summary for the matrix and
 * history, which then never parse a diff's JSON.
 *
 * sec: the cache has a size (--diff-cache-max, migration 021). Each row records its bytes
 * (text and layer rows), when it was last used and whether its tolerances are the
 * defaults. A write that would pass the cap first drops the least recently used rows, of
 * other tolerances before any of the defaults, in the same transaction. A read records
 * its row in a small list kept in memory (no write on the read path), which the next
 * write, or the compare worker's pass, applies.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "db.h"

static const char SQL_DIFF_INSERT[] =
    "INSERT INTO diffs(run_a, run_b, truth, atol, rtol, engine_version, first_divergent, "
    "n_layers, json, seconds, created_at, bytes, last_used, tol_default) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?11, ?13) "
    "ON CONFLICT DO NOTHING RETURNING id";
static const char SQL_CACHE_TOTALS[] =
    "SELECT CAST(coalesce(sum(bytes), 0) AS BIGINT), count(*) FROM diffs";
static const char SQL_CACHE_OLDEST[] =
    "SELECT id, bytes FROM diffs ORDER BY tol_default, last_used, id LIMIT 64";
static const char SQL_CACHE_DROP[] = "DELETE FROM diffs WHERE id = ?1";
static const char SQL_CACHE_TOUCH[] =
    "UPDATE diffs SET last_used = ?2 WHERE id = ?1 AND last_used < ?2";
static const char SQL_DIFF_LAYER_INSERT[] =
    "INSERT INTO diff_layers(diff_id, idx, name, verdict, err, max_abs) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
/* The named layer (the first of that name), or with ?7 NULL the last one. */
static const char SQL_DIFF_SUMMARY[] =
    "SELECT d.first_divergent, l.verdict, l.err, l.max_abs, l.idx IS NOT NULL, d.id "
    "FROM diffs d LEFT JOIN diff_layers l ON l.diff_id = d.id AND "
    "l.idx = CASE WHEN CAST(?7 AS TEXT) IS NULL THEN d.n_layers - 1 ELSE (SELECT min(idx) "
    "FROM diff_layers WHERE diff_id = d.id AND name = ?7) END "
    "WHERE d.run_a = ?1 AND d.run_b = ?2 AND d.truth = ?3 AND d.atol = ?4 AND d.rtol = ?5 "
    "AND d.engine_version = ?6";

/* ---- the rows read since the last write: their last_used is set then ---- */

#define TOUCH_MAX 4096

static pthread_mutex_t touch_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t touched[TOUCH_MAX];
static int n_touched;

/* Records that row was read (once; the rest of a full list is dropped: LRU is an order). */
static void
touch(int64_t row)
{
    pthread_mutex_lock(&touch_lock);
    int i = 0;
    while (i < n_touched && touched[i] != row)
        i++;
    if (i == n_touched && n_touched < TOUCH_MAX)
        touched[n_touched++] = row;
    pthread_mutex_unlock(&touch_lock);
}

/* Sets last_used of the rows read, inside the caller's write transaction. */
static int
touch_apply(struct srv_db *db, int64_t now, struct gd_err *err)
{
    static int64_t rows[TOUCH_MAX];
    static pthread_mutex_t apply_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&apply_lock);
    pthread_mutex_lock(&touch_lock);
    int n = n_touched;
    memcpy(rows, touched, sizeof rows[0] * (size_t)n);
    n_touched = 0;
    pthread_mutex_unlock(&touch_lock);
    struct srv_stmt *st;
    int rc = n > 0 ? srv_db_prepare(db, SQL_CACHE_TOUCH, &st, err) : 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        srv_stmt_bind_int64(st, 1, rows[i]);
        srv_stmt_bind_int64(st, 2, now);
        rc = srv_stmt_exec(st, "diff touch", err);
    }
    pthread_mutex_unlock(&apply_lock);
    return rc;
}

int
srv_db_diff_touch_flush(struct srv_db *db, int64_t now, struct gd_err *err)
{
    pthread_mutex_lock(&touch_lock);
    int n = n_touched;
    pthread_mutex_unlock(&touch_lock);
    if (n == 0)
        return 0;
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = touch_apply(db, now, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}

int
srv_db_diff_cache_totals(struct srv_db *db, int64_t *bytes, int64_t *entries, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_CACHE_TOTALS, &st, err);
    if (rc != 0)
        return rc;
    int s = srv_stmt_step(st, "diff cache size", err);
    if (s == SRV_SQL_ROW) {
        *bytes = srv_stmt_int64(st, 0);
        *entries = srv_stmt_int64(st, 1);
    }
    srv_stmt_done(st);
    return s == SRV_SQL_ROW ? 0 : s < 0 ? s : gd_err_set(err, GD_EIO, "diff cache size: no row");
}

/*
 * Drops the least recently used rows (other tolerances first) until need more bytes fit
 * under cap, inside the caller's write transaction.
 */
static int
evict(struct srv_db *db, int64_t need, int64_t cap, struct gd_err *err)
{
    int64_t total = 0, entries = 0;
    int rc = srv_db_diff_cache_totals(db, &total, &entries, err);
    while (rc == 0 && total + need > cap && entries > 0) {
        struct srv_stmt *st;
        int64_t ids[64], sizes[64];
        int n = 0, s;
        rc = srv_db_prepare(db, SQL_CACHE_OLDEST, &st, err);
        if (rc != 0)
            break;
        while (n < 64 && (s = srv_stmt_step(st, "diff cache order", err)) == SRV_SQL_ROW) {
            ids[n] = srv_stmt_int64(st, 0);
            sizes[n++] = srv_stmt_int64(st, 1);
        }
        srv_stmt_done(st);
        if (n < 64 && s < 0) {
            rc = s;
            break;
        }
        if (n == 0)
            break;
        rc = srv_db_prepare(db, SQL_CACHE_DROP, &st, err);
        for (int i = 0; rc == 0 && i < n && total + need > cap; i++) {
            srv_stmt_bind_int64(st, 1, ids[i]);
            rc = srv_stmt_exec(st, "diff cache eviction", err);
            total -= sizes[i];
            entries--;
            srv_metrics_add(SRV_M_DIFF_EVICTIONS, 1);
        }
    }
    return rc;
}

/* What a row holds: its text, its layer rows (name, verdict, numbers, keys) and the row. */
static int64_t
row_bytes(const struct srv_diff_row *row)
{
    int64_t n = (int64_t)strlen(row->json) + 128;
    for (int i = 0; i < row->n_layers; i++)
        n += (int64_t)(strlen(row->layers[i].name) + strlen(row->layers[i].verdict)) + 48;
    return n;
}

static void
bind_key(struct srv_stmt *st, const struct srv_diff_key *key)
{
    srv_stmt_bind_text(st, 1, key->a);
    srv_stmt_bind_text(st, 2, key->b);
    srv_stmt_bind_text(st, 3, key->truth != NULL ? key->truth : "");
    srv_stmt_bind_double(st, 4, key->atol);
    srv_stmt_bind_double(st, 5, key->rtol);
    srv_stmt_bind_text(st, 6, key->engine_version);
}

/*
 * The key's row and the byte length of its text: one query on PostgreSQL (octet_length of
 * the bytea), the row then the size from the blob handle on SQLite.
 */
static const char SQL_DIFF_ROW[] =
    "SELECT id FROM diffs WHERE run_a = ?1 AND run_b = ?2 AND truth = ?3 AND atol = ?4 "
    "AND rtol = ?5 AND engine_version = ?6";
/*
 * On PostgreSQL the text comes in the same query when it is at most ?7 bytes (issue 24: one
 * round trip to a backend, not two, under load each a wait for the CPU), in bytea's escape
 * form: the JSON's bytes as they are but for backslashes (doubled) and bytes of the high
 * half (\ooo), so about its own size, where hex would be twice it.
 */
static const char SQL_DIFF_ROW_PG[] =
    "SELECT id, octet_length(json), CASE WHEN octet_length(json) <= CAST(?7 AS bigint) THEN "
    "encode(json, 'escape') END FROM diffs WHERE run_a = ?1 AND run_b = ?2 AND truth = ?3 "
    "AND atol = ?4 AND rtol = ?5 AND engine_version = ?6";

/*
 * bytea's escape form (src, src_len) back into n bytes at out; -1 when it is not that: "\\"
 * is a backslash, "\ooo" a byte in octal, every other byte itself.
 */
static int
unescape(const char *src, size_t src_len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < src_len; k++) {
        if (k == n)
            return -1;
        if (src[i] != '\\') {
            out[k] = src[i++];
        } else if (i + 1 < src_len && src[i + 1] == '\\') {
            out[k] = '\\';
            i += 2;
        } else if (i + 3 < src_len && src[i + 1] >= '0' && src[i + 1] <= '3' && src[i + 2] >= '0' &&
                   src[i + 2] <= '7' && src[i + 3] >= '0' && src[i + 3] <= '7') {
            out[k] = (char)((src[i + 1] - '0') * 64 + (src[i + 2] - '0') * 8 + (src[i + 3] - '0'));
            i += 4;
        } else {
            return -1;
        }
    }
    return k == n ? 0 : -1;
}

/*
 * On SQLite the text is read as a piece; on PostgreSQL, beyond ?7 bytes, too, in binary: a
 * bytea column in a query's text result would cross as hex (twice the bytes, encoded by the
 * server and decoded here).
 */
int
srv_db_diff_locate(struct srv_db *db, const struct srv_diff_key *key, uint64_t inline_max,
                   int64_t *row, uint64_t *len, char **text, size_t *text_len,
                   struct gd_err *err)
{
    *text = NULL;
    *text_len = 0;
    int pg = srv_db_dialect(db) == SRV_SQL_PG;
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, pg ? SQL_DIFF_ROW_PG : SQL_DIFF_ROW, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    if (pg)
        srv_stmt_bind_int64(st, 7,
                            inline_max > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)inline_max);
    int s = srv_stmt_step(st, "diff lookup", err);
    if (s != SRV_SQL_ROW) {
        srv_stmt_done(st);
        return s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached") : s;
    }
    int64_t id = srv_stmt_int64(st, 0);
    int64_t pg_len = pg ? srv_stmt_int64(st, 1) : 0;
    touch(id); /* a use, however the text is read (it was missed on PostgreSQL's inline path) */
    if (pg && !srv_stmt_null(st, 2) && pg_len >= 0 && (uint64_t)pg_len <= inline_max &&
        (uint64_t)pg_len < SIZE_MAX - 2) {
        size_t esc_len = 0;
        const char *esc = srv_stmt_blob(st, 2, &esc_len);
        char *copy = malloc((size_t)pg_len + 2);
        rc = copy == NULL ? gd_err_set(err, GD_ENOMEM, "out of memory for a diff of %lld bytes",
                                       (long long)pg_len)
             : unescape(esc, esc_len, copy, (size_t)pg_len) != 0
                 ? gd_err_set(err, GD_EIO, "cached diff %lld: its text did not decode",
                              (long long)id)
                 : 0;
        srv_stmt_done(st);
        if (rc != 0) {
            free(copy);
            return rc;
        }
        copy[pg_len] = '\n';
        copy[pg_len + 1] = '\0';
        *text = copy;
        *text_len = (size_t)pg_len + 1;
        *row = id;
        *len = (uint64_t)pg_len;
        return 0;
    }
    srv_stmt_done(st);
    const struct srv_sql_backend *be = srv_db_backend(db);
    uint64_t n = (uint64_t)pg_len;
    if (!pg && (rc = be->piece_size(srv_db_sql_conn(db), SRV_PIECE_DIFF, id, &n, err)) != 0)
        return rc;
    if (n <= inline_max) {
        if (n > SIZE_MAX - 2)
            return gd_err_set(err, GD_ENOMEM, "a diff of %llu bytes", (unsigned long long)n);
        char *copy = malloc((size_t)n + 2);
        if (copy == NULL)
            return gd_err_set(err, GD_ENOMEM, "out of memory for a diff of %llu bytes",
                              (unsigned long long)n);
        struct srv_sql_piece_handle *h = NULL;
        rc = n > 0 ? be->piece_read(srv_db_sql_conn(db), SRV_PIECE_DIFF, id, &h, 0, copy,
                                    (size_t)n, err)
                   : 0;
        be->piece_close(&h);
        if (rc != 0) {
            free(copy);
            return rc;
        }
        copy[n] = '\n';
        copy[n + 1] = '\0';
        *text = copy;
        *text_len = (size_t)n + 1;
    }
    *row = id;
    *len = n;
    return 0;
}

int
srv_db_diff_json(struct srv_db *db, const struct srv_diff_key *key, char **text, size_t *len,
                 struct gd_err *err)
{
    int64_t row;
    uint64_t size;
    return srv_db_diff_locate(db, key, UINT64_MAX, &row, &size, text, len, err);
}

int
srv_db_diff_read(struct srv_db *db, int64_t row, uint64_t len, uint64_t off, void *buf, size_t n,
                 struct gd_err *err)
{
    const struct srv_sql_backend *be = srv_db_backend(db);
    uint64_t size = 0;
    int rc = be->piece_size(srv_db_sql_conn(db), SRV_PIECE_DIFF, row, &size, err);
    if (rc != 0)
        return rc;
    if (size != len || off > len || n > len - off)
        return gd_err_set(err, GD_EIO, "cached diff %lld changed while it was sent",
                          (long long)row);
    struct srv_sql_piece_handle *h = NULL;
    rc = be->piece_read(srv_db_sql_conn(db), SRV_PIECE_DIFF, row, &h, off, buf, n, err);
    be->piece_close(&h);
    return rc;
}

static void
bind_number(struct srv_stmt *st, int i, double v)
{
    if (isfinite(v))
        srv_stmt_bind_double(st, i, v);
    else
        srv_stmt_bind_null(st, i);
}

int
srv_db_diff_put(struct srv_db *db, const struct srv_diff_key *key, const struct srv_diff_row *row,
                int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int64_t bytes = row_bytes(row);
    /* Larger than the whole cache: served, never stored (and counted). */
    if (row->cache_max > 0 && bytes > row->cache_max) {
        srv_metrics_add(SRV_M_DIFF_UNCACHED, 1);
        return 0;
    }
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = touch_apply(db, now, err);
    if (rc == 0 && row->cache_max > 0)
        rc = evict(db, bytes, row->cache_max, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_DIFF_INSERT, &st, err);
    if (rc != 0)
        goto done;
    bind_key(st, key);
    srv_stmt_bind_text(st, 7, row->first_divergent);
    srv_stmt_bind_int64(st, 8, row->n_layers);
    /* PostgreSQL keeps the text as bytes (bytea), so that it can be sent in byte ranges. */
    if (srv_db_dialect(db) == SRV_SQL_PG)
        srv_stmt_bind_blob(st, 9, row->json, strlen(row->json));
    else
        srv_stmt_bind_text(st, 9, row->json);
    srv_stmt_bind_double(st, 10, row->seconds);
    srv_stmt_bind_int64(st, 11, now);
    srv_stmt_bind_int64(st, 12, bytes);
    srv_stmt_bind_int64(st, 13, key->atol == SRV_DIFF_ATOL && key->rtol == SRV_DIFF_RTOL);
    int s = srv_stmt_step(st, "diff insert", err);
    /* No row: another daemon cached it first; its row is as good as this one. */
    int64_t id = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : 0;
    srv_stmt_done(st);
    if (s != SRV_SQL_ROW) {
        rc = s < 0 ? s : 0;
        goto done;
    }
    rc = srv_db_prepare(db, SQL_DIFF_LAYER_INSERT, &st, err);
    for (int i = 0; rc == 0 && i < row->n_layers; i++) {
        const struct srv_diff_layer_sum *l = &row->layers[i];
        srv_stmt_done(st);
        srv_stmt_bind_int64(st, 1, id);
        srv_stmt_bind_int64(st, 2, i);
        srv_stmt_bind_text(st, 3, l->name);
        srv_stmt_bind_text(st, 4, l->verdict);
        bind_number(st, 5, l->err);
        bind_number(st, 6, l->max_abs);
        s = srv_stmt_step(st, "diff layer insert", err);
        if (s < 0)
            rc = s;
    }
    if (rc == 0)
        srv_stmt_done(st);
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DIFF_SUMMARY, &st, err);
    if (rc != 0)
        return rc;
    bind_key(st, key);
    srv_stmt_bind_text(st, 7, layer);
    int s = srv_stmt_step(st, "diff summary", err);
    if (s != SRV_SQL_ROW) {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached") : s;
        goto done;
    }
    struct srv_diff_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.has_first = !srv_stmt_null(st, 0);
    if (sum.has_first)
        snprintf(sum.first_divergent, sizeof sum.first_divergent, "%s", srv_stmt_text(st, 0));
    sum.layer_found = srv_stmt_int(st, 4);
    snprintf(sum.verdict, sizeof sum.verdict, "%s", sum.layer_found ? srv_stmt_text(st, 1) : "");
    sum.err = srv_stmt_null(st, 2) ? NAN : srv_stmt_double(st, 2);
    sum.max_abs = srv_stmt_null(st, 3) ? NAN : srv_stmt_double(st, 3);
    touch(srv_stmt_int64(st, 5));
    *out = sum;
done:
    srv_stmt_done(st);
    return rc;
}
