/*
 * db_blobs.c: blob rows: written from a spill file by the backend, read back in pieces,
 * totals, and retention.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* Rows per retention transaction, so that uploads wait for at most one short batch. */
#define BATCH 100

static const char SQL_BLOB_TOTALS[] =
    "SELECT count(*), coalesce(sum(raw_size), 0), coalesce(sum(stored_size), 0) FROM blobs";
static const char SQL_RET_RUNS[] =
    "SELECT id FROM runs WHERE state = 'complete' AND trimmed_at IS NULL AND received_at < ?1 "
    "LIMIT 100";
static const char SQL_RET_UNLINK[] = "UPDATE layers SET blob_sha256 = NULL WHERE run_id = ?1";
static const char SQL_RET_TRIM[] = "UPDATE runs SET trimmed_at = ?2 WHERE id = ?1";
static const char SQL_RET_ABANDONED[] =
    "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE state = 'uploading' "
    "AND received_at < ?1 LIMIT 100)";
/* A blob no layer uses and no job's file is (jobsrv: files of jobs, migration 011, stay). */
static const char SQL_RET_BLOBS[] =
    "DELETE FROM blobs WHERE id IN (SELECT b.id FROM blobs b WHERE NOT EXISTS "
    "(SELECT 1 FROM layers l WHERE l.blob_sha256 = b.sha256) AND NOT EXISTS "
    "(SELECT 1 FROM fleet_files f WHERE f.sha256 = b.sha256) LIMIT 100)";

_Static_assert(BATCH == 100, "the retention statements say LIMIT 100");

int
srv_db_blob_read(struct srv_db *db, int64_t blob_id, struct srv_sql_piece_handle **handle,
                 uint64_t off, void *buf, size_t len, struct gd_err *err)
{
    return srv_db_backend(db)->piece_read(srv_db_sql_conn(db), SRV_PIECE_BLOB, blob_id, handle,
                                          off, buf, len, err);
}

void
srv_db_blob_close(struct srv_db *db, struct srv_sql_piece_handle **handle)
{
    srv_db_backend(db)->piece_close(handle);
}

int
srv_db_blob_insert(struct srv_db *db, const char *sha256, const struct srv_blob_spill *spill,
                   int64_t now, struct gd_err *err)
{
    return srv_db_backend(db)->blob_insert(srv_db_sql_conn(db), sha256, spill, now, err);
}

int
srv_db_blob_totals(struct srv_db *db, int64_t *count, int64_t *raw, int64_t *stored,
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_BLOB_TOTALS, &st, err);
    if (rc != 0)
        return rc;
    int s = srv_stmt_step(st, "blob totals", err);
    if (s == SRV_SQL_ROW) {
        *count = srv_stmt_int64(st, 0);
        *raw = srv_stmt_int64(st, 1);
        *stored = srv_stmt_int64(st, 2);
    }
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}

/* Runs a batch statement bound to cutoff in its own transaction; *n its changes. */
static int
batch(struct srv_db *db, const char *sql, int64_t cutoff, int bind_cutoff, int64_t *n,
      struct gd_err *err)
{
    struct srv_stmt *st;
    *n = 0;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, sql, &st, err);
    if (rc == 0) {
        if (bind_cutoff)
            srv_stmt_bind_int64(st, 1, cutoff);
        int s = srv_stmt_step(st, "retention", err);
        if (s >= 0)
            *n = srv_stmt_changes(st);
        srv_stmt_done(st);
        rc = s < 0 ? s : 0;
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}

/* One batch of complete runs past the cutoff: their layers let go of their blobs. */
static int
trim_batch(struct srv_db *db, int64_t cutoff, int64_t now, int64_t *n, struct gd_err *err)
{
    struct srv_stmt *st;
    char ids[BATCH][40];
    int count = 0;
    *n = 0;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RET_RUNS, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_int64(st, 1, cutoff);
    int s;
    while (count < BATCH && (s = srv_stmt_step(st, "retention", err)) == SRV_SQL_ROW)
        snprintf(ids[count++], sizeof ids[0], "%s", srv_stmt_text(st, 0));
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    for (int i = 0; rc == 0 && i < count; i++) {
        static const char *const steps[] = {SQL_RET_UNLINK, SQL_RET_TRIM};
        for (int k = 0; rc == 0 && k < 2; k++) {
            rc = srv_db_prepare(db, steps[k], &st, err);
            if (rc != 0)
                break;
            srv_stmt_bind_text(st, 1, ids[i]);
            if (k == 1)
                srv_stmt_bind_int64(st, 2, now);
            rc = srv_stmt_exec(st, "retention", err);
        }
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    if (rc == 0)
        *n = count;
done:
    srv_db_rollback(db);
    return rc;
}

int
srv_db_retention(struct srv_db *db, int64_t cutoff, int64_t *runs_trimmed, int64_t *runs_deleted,
                 int64_t *blobs_deleted, struct gd_err *err)
{
    int64_t n = 0, now = srv_now();
    int rc = 0;
    *runs_trimmed = *runs_deleted = *blobs_deleted = 0;
    do {
        rc = trim_batch(db, cutoff, now, &n, err);
        *runs_trimmed += n;
    } while (rc == 0 && n == BATCH);
    do {
        if (rc == 0)
            rc = batch(db, SQL_RET_ABANDONED, cutoff, 1, &n, err);
        *runs_deleted += rc == 0 ? n : 0;
    } while (rc == 0 && n == BATCH);
    do {
        if (rc == 0)
            rc = batch(db, SQL_RET_BLOBS, cutoff, 0, &n, err);
        *blobs_deleted += rc == 0 ? n : 0;
    } while (rc == 0 && n == BATCH);
    return rc;
}
