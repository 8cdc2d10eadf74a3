/*
 * db_fleet_files.c: fleet_files (migration 011), the files jobs name (models, inputs, their
 * data). A file's bytes are a blob like a layer's: one copy per SHA-256, whoever sent it
 * (two daemons ingesting the same bytes serialize on the hash and store it once); its row
 * here says a job may name it and keeps it from retention.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"

static const char SQL_FILE_STATE[] =
    "SELECT (SELECT count(*) FROM fleet_files WHERE sha256 = ?1), "
    "(SELECT count(*) FROM blobs WHERE sha256 = ?1)";
static const char SQL_BLOB_EXISTS[] = "SELECT raw_size FROM blobs WHERE sha256 = ?1";
static const char SQL_FILE_ADD[] =
    "INSERT INTO fleet_files(sha256, bytes, created_at) VALUES(?1, ?2, ?3) "
    "ON CONFLICT DO NOTHING";
static const char SQL_FILE_LOCATE[] =
    "SELECT b.id, b.elem_size, b.raw_size, b.stored_size FROM fleet_files f "
    "JOIN blobs b ON b.sha256 = f.sha256 WHERE f.sha256 = ?1";

int
srv_db_fleet_file_state(struct srv_db *db, const char *sha256, int *is_file, int *blob_stored,
                        struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_FILE_STATE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, sha256);
    int s = srv_stmt_step(st, "file lookup", err);
    if (s == SRV_SQL_ROW) {
        *is_file = srv_stmt_int64(st, 0) > 0;
        *blob_stored = srv_stmt_int64(st, 1) > 0;
    }
    srv_stmt_done(st);
    return s == SRV_SQL_ROW ? 0 : s < 0 ? s : gd_err_set(err, GD_EIO, "file lookup: no row");
}

int
srv_db_fleet_file_commit(struct srv_db *db, const char *sha256, uint64_t bytes,
                         const struct srv_blob_spill *spill, int64_t now, int *created,
                         struct gd_err *err)
{
    struct srv_stmt *st;
    *created = 0;
    int rc = srv_db_begin_shared(db, err);
    if (rc == 0)
        rc = srv_db_lock_key(db, sha256, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_BLOB_EXISTS, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, sha256);
    int s = srv_stmt_step(st, "blob lookup", err);
    int64_t raw = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : -1;
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    if (s == SRV_SQL_ROW && raw != (int64_t)bytes) {
        rc = gd_err_set(err, GD_EIO, "blob %s holds %lld bytes, not %llu", sha256, (long long)raw,
                        (unsigned long long)bytes);
        goto done;
    }
    if (s == SRV_SQL_DONE) {
        if (spill == NULL) {
            rc = gd_err_set(err, SRV_EBUSY,
                            "the stored copy of this data was dropped by retention meanwhile; "
                            "send the file again");
            goto done;
        }
        rc = srv_db_blob_insert(db, sha256, spill, now, err);
        if (rc != 0)
            goto done;
    }
    rc = srv_db_prepare(db, SQL_FILE_ADD, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, sha256);
    srv_stmt_bind_int64(st, 2, (int64_t)bytes);
    srv_stmt_bind_int64(st, 3, now);
    s = srv_stmt_step(st, "file insert", err);
    int added = s == SRV_SQL_DONE && srv_stmt_changes(st) > 0;
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    rc = srv_db_commit(db, err);
    if (rc == 0)
        *created = added;
done:
    srv_db_rollback(db);
    return rc;
}

int
srv_db_fleet_file_locate(struct srv_db *db, const char *sha256, struct srv_fleet_file_loc *out,
                         struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_FILE_LOCATE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, sha256);
    int s = srv_stmt_step(st, "file lookup", err);
    if (s == SRV_SQL_ROW) {
        out->blob_id = srv_stmt_int64(st, 0);
        out->elem_size = srv_stmt_int(st, 1);
        out->raw_size = (uint64_t)srv_stmt_int64(st, 2);
        out->stored_size = (uint64_t)srv_stmt_int64(st, 3);
    }
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no file %s", sha256);
    return s < 0 ? s : 0;
}
