/*
 * db_blobs.c: blob rows: written from a spill file in pieces through SQLite's incremental
 * blob I/O, read back in pieces the same way, totals, and retention.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "db.h"

/* Piece size for copying between a spill file and a blob: memory stays at this. */
#define PIECE ((size_t)256 * 1024)
/* Rows per retention transaction, so that uploads wait for at most one short batch. */
#define BATCH 100

static const char SQL_BLOB_INSERT[] =
    "INSERT INTO blobs(sha256, dtype, elem_size, raw_size, stored_size, codec, created_at, data) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char SQL_BLOB_TOTALS[] =
    "SELECT count(*), total(raw_size), total(stored_size) FROM blobs";
static const char SQL_RET_RUNS[] =
    "SELECT id FROM runs WHERE state = 'complete' AND trimmed_at IS NULL AND received_at < ?1 "
    "LIMIT 100";
static const char SQL_RET_UNLINK[] = "UPDATE layers SET blob_sha256 = NULL WHERE run_id = ?1";
static const char SQL_RET_TRIM[] = "UPDATE runs SET trimmed_at = ?2 WHERE id = ?1";
static const char SQL_RET_ABANDONED[] =
    "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE state = 'uploading' "
    "AND received_at < ?1 LIMIT 100)";
static const char SQL_RET_BLOBS[] =
    "DELETE FROM blobs WHERE id IN (SELECT b.id FROM blobs b WHERE NOT EXISTS "
    "(SELECT 1 FROM layers l WHERE l.blob_sha256 = b.sha256) LIMIT 100)";

_Static_assert(BATCH == 100, "the retention statements say LIMIT 100");

int
srv_db_blob_read(struct srv_db *db, int64_t blob_id, sqlite3_blob **handle, uint64_t off, void *buf,
                 size_t len, struct gd_err *err)
{
    if (*handle == NULL) {
        int s = sqlite3_blob_open(srv_db_conn(db), "main", "blobs", "data", blob_id, 0, handle);
        if (s != SQLITE_OK) {
            srv_db_blob_close(handle);
            return srv_db_fail(db, s, "blob open", err);
        }
    }
    int size = sqlite3_blob_bytes(*handle);
    if (off > (uint64_t)size || len > (uint64_t)size - off)
        return gd_err_set(err, GD_EIO, "blob %lld is %d bytes, shorter than expected",
                          (long long)blob_id, size);
    int s = sqlite3_blob_read(*handle, buf, (int)len, (int)off);
    return s == SQLITE_OK ? 0 : srv_db_fail(db, s, "blob read", err);
}

void
srv_db_blob_close(sqlite3_blob **handle)
{
    sqlite3_blob_close(*handle);
    *handle = NULL;
}

/* Copies the spill file into the new blob row's zeroblob in pieces of PIECE bytes. */
static int
blob_copy(struct srv_db *db, sqlite3_int64 rowid, const struct srv_blob_spill *spill,
          struct gd_err *err)
{
    sqlite3_blob *b = NULL;
    int s = sqlite3_blob_open(srv_db_conn(db), "main", "blobs", "data", rowid, 1, &b);
    if (s != SQLITE_OK) {
        sqlite3_blob_close(b);
        return srv_db_fail(db, s, "blob open", err);
    }
    unsigned char *piece = malloc(PIECE);
    if (piece == NULL) {
        sqlite3_blob_close(b);
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    }
    int rc = 0;
    uint64_t off = 0;
    while (rc == 0 && off < spill->stored_size) {
        size_t n = spill->stored_size - off < PIECE ? (size_t)(spill->stored_size - off) : PIECE;
        ssize_t got = pread(spill->fd, piece, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = gd_err_set(err, GD_EIO, "spill file: %s",
                            got < 0 ? strerror(errno) : "shorter than written");
            break;
        }
        s = sqlite3_blob_write(b, piece, (int)got, (int)off);
        if (s != SQLITE_OK)
            rc = srv_db_fail(db, s, "blob write", err);
        off += (uint64_t)got;
    }
    free(piece);
    s = sqlite3_blob_close(b);
    if (rc == 0 && s != SQLITE_OK)
        rc = srv_db_fail(db, s, "blob close", err);
    return rc;
}

int
srv_db_blob_insert(struct srv_db *db, const char *sha256, const struct srv_blob_spill *spill,
                   int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st = NULL;
    if (spill->stored_size > (uint64_t)INT32_MAX)
        return gd_err_set(err, GD_ERANGE, "compressed data of %llu bytes is over SQLite's limit",
                          (unsigned long long)spill->stored_size);
    /*
     * The spill file is bound as the value through a read-only mapping: SQLite copies it
     * once into its pages, and the bytes live in the kernel's page cache (where the spill
     * was just written), not on the daemon's heap. A zeroblob filled piece by piece, the
     * fallback, writes every page twice and costs about 40% more (docs/PERFORMANCE.md).
     */
    void *map = mmap(NULL, (size_t)spill->stored_size, PROT_READ, MAP_SHARED, spill->fd, 0);
    int rc = srv_db_prepare(db, SQL_BLOB_INSERT, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, sha256);
    srv_db_bind_text(st, 2, spill->dtype);
    sqlite3_bind_int(st, 3, spill->elem_size);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)spill->raw_size);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)spill->stored_size);
    srv_db_bind_text(st, 6, spill->codec);
    sqlite3_bind_int64(st, 7, now);
    if (map != MAP_FAILED)
        sqlite3_bind_blob64(st, 8, map, spill->stored_size, SQLITE_STATIC);
    else
        sqlite3_bind_zeroblob64(st, 8, spill->stored_size);
    int s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = srv_db_fail(db, s, "blob insert", err);
        goto done;
    }
    if (map == MAP_FAILED)
        rc = blob_copy(db, sqlite3_last_insert_rowid(srv_db_conn(db)), spill, err);
done:
    /* SQLITE_STATIC: the mapping must outlive the statement's use of it, which ends above. */
    if (st != NULL)
        sqlite3_clear_bindings(st);
    if (map != MAP_FAILED)
        munmap(map, (size_t)spill->stored_size);
    return rc;
}

int
srv_db_blob_totals(struct srv_db *db, int64_t *count, int64_t *raw, int64_t *stored,
                   struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_BLOB_TOTALS, &st, err);
    if (rc != 0)
        return rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *count = sqlite3_column_int64(st, 0);
        *raw = (int64_t)sqlite3_column_double(st, 1);
        *stored = (int64_t)sqlite3_column_double(st, 2);
    }
    srv_db_done(st);
    return s == SQLITE_ROW ? 0 : srv_db_fail(db, s, "blob totals", err);
}

/* Runs a batch statement bound to cutoff (or nothing) in its own transaction; *n its changes. */
static int
batch(struct srv_db *db, const char *sql, int64_t cutoff, int64_t *n, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, sql, &st, err);
    if (rc == 0) {
        if (sqlite3_bind_parameter_count(st) > 0)
            sqlite3_bind_int64(st, 1, cutoff);
        int s = sqlite3_step(st);
        srv_db_done(st);
        if (s != SQLITE_DONE)
            rc = srv_db_fail(db, s, "retention", err);
    }
    *n = sqlite3_changes(srv_db_conn(db));
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}

/* One batch of complete runs past the cutoff: their layers let go of their blobs. */
static int
trim_batch(struct srv_db *db, int64_t cutoff, int64_t now, int64_t *n, struct gd_err *err)
{
    sqlite3_stmt *st;
    char ids[BATCH][40];
    int count = 0;
    *n = 0;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RET_RUNS, &st, err);
    if (rc != 0)
        goto done;
    sqlite3_bind_int64(st, 1, cutoff);
    int s;
    while (count < BATCH && (s = sqlite3_step(st)) == SQLITE_ROW)
        snprintf(ids[count++], sizeof ids[0], "%s", (const char *)sqlite3_column_text(st, 0));
    srv_db_done(st);
    for (int i = 0; rc == 0 && i < count; i++) {
        static const char *const steps[] = {SQL_RET_UNLINK, SQL_RET_TRIM};
        for (int k = 0; rc == 0 && k < 2; k++) {
            rc = srv_db_prepare(db, steps[k], &st, err);
            if (rc != 0)
                break;
            srv_db_bind_text(st, 1, ids[i]);
            if (k == 1)
                sqlite3_bind_int64(st, 2, now);
            s = sqlite3_step(st);
            srv_db_done(st);
            if (s != SQLITE_DONE)
                rc = srv_db_fail(db, s, "retention", err);
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
            rc = batch(db, SQL_RET_ABANDONED, cutoff, &n, err);
        *runs_deleted += rc == 0 ? n : 0;
    } while (rc == 0 && n == BATCH);
    do {
        if (rc == 0)
            rc = batch(db, SQL_RET_BLOBS, cutoff, &n, err);
        *blobs_deleted += rc == 0 ? n : 0;
    } while (rc == 0 && n == BATCH);
    return rc;
}
