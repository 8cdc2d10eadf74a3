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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_MATRIX_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, model);
    srv_stmt_bind_text(st, 2, signature);
    int s = srv_stmt_step(st, "matrix lookup", err);
    if (s != SRV_SQL_ROW) {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "not cached") : s;
        goto done;
    }
    size_t n = 0;
    const void *data = srv_stmt_blob(st, 0, &n);
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
    srv_stmt_done(st);
    return rc;
}

int
srv_db_matrix_put(struct srv_db *db, const char *model, const char *signature, int n_devices,
                  const char *json, double seconds, int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_MATRIX_PUT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, model);
    srv_stmt_bind_text(st, 2, signature);
    srv_stmt_bind_int64(st, 3, n_devices);
    srv_stmt_bind_text(st, 4, json);
    srv_stmt_bind_double(st, 5, seconds);
    srv_stmt_bind_int64(st, 6, now);
    rc = srv_stmt_exec(st, "matrix cache write", err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}
