/*
 * db_matrix.c: the matrix cache (migration 005): each model's newest complete device matrix
 * as the JSON text GET .../matrix serves, under the signature of what it was made from, so a
 * second load is one indexed read (docs/SERVER.md, "The matrix cache").
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"

static const char SQL_MATRIX_GET[] =
    "SELECT c.json FROM matrix_cache c JOIN models m ON m.id = c.model_id "
    "WHERE m.name = ?1 AND c.signature = ?2";
static const char SQL_MATRIX_PUT[] =
    "INSERT INTO matrix_cache(model_id, signature, n_devices, json, seconds, created_at) "
    "SELECT id, ?2, ?3, ?4, ?5, ?6 FROM models WHERE name = ?1 "
    "ON CONFLICT(model_id) DO UPDATE SET signature = excluded.signature, "
    "n_devices = excluded.n_devices, json = excluded.json, seconds = excluded.seconds, "
    "created_at = excluded.created_at";

int
srv_db_matrix_get(struct srv_db *db, const char *model, const char *signature, char **text,
                  size_t *len, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_MATRIX_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, model);
    srv_db_bind_text(st, 2, signature);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached")
                              : srv_db_fail(db, s, "matrix lookup", err);
        goto done;
    }
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    const void *data = sqlite3_column_blob(st, 0);
    char *copy = malloc(n + 1);
    if (copy == NULL) {
        rc = gd_err_set(err, GD_ENOMEM, "out of memory for a matrix of %zu bytes", n);
        goto done;
    }
    if (n > 0)
        memcpy(copy, data, n);
    copy[n] = '\0';
    *text = copy;
    *len = n;
done:
    srv_db_done(st);
    return rc;
}

int
srv_db_matrix_put(struct srv_db *db, const char *model, const char *signature, int n_devices,
                  const char *json, double seconds, int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_MATRIX_PUT, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, model);
    srv_db_bind_text(st, 2, signature);
    sqlite3_bind_int(st, 3, n_devices);
    sqlite3_bind_text(st, 4, json, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, seconds);
    sqlite3_bind_int64(st, 6, now);
    int s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = srv_db_fail(db, s, "matrix cache write", err);
        goto done;
    }
    rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}
