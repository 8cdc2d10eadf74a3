/*
 * db_requests.c: layer_requests (migration 006), the tensors the daemon asks agents for
 * where a run holds only fingerprints, and the state of such layers: which are here, which
 * are asked for, and what a fetched tensor changes (its request is fulfilled and the run's
 * cached diffs and its model's matrix are dropped, in the transaction that stores it).
 */
#include <stdio.h>
#include <string.h>

#include "db.h"

static const char SQL_REQ_ADD[] =
    "INSERT INTO layer_requests(run_id, idx, reason, other_run, requested_at) "
    "SELECT ?1, ?2, CAST(?3 AS TEXT), CAST(?4 AS TEXT), CAST(?5 AS BIGINT) FROM layers "
    "WHERE run_id = ?1 AND idx = ?2 "
    "AND uploaded_at IS NULL ON CONFLICT DO NOTHING";
static const char SQL_REQ_LIST[] =
    "SELECT q.idx, l.name, q.reason, q.other_run, q.requested_at, q.fulfilled_at "
    "FROM layer_requests q JOIN layers l ON l.run_id = q.run_id AND l.idx = q.idx "
    "WHERE q.run_id = ?1 ORDER BY q.idx";
static const char SQL_RUN_EXISTS[] = "SELECT 1 FROM runs WHERE id = ?1";
static const char SQL_PRESENT[] =
    "SELECT idx, uploaded_at IS NOT NULL FROM layers WHERE run_id = ?1 ORDER BY idx";
static const char SQL_REQ_FULFIL[] =
    "UPDATE layer_requests SET fulfilled_at = ?3 WHERE run_id = ?1 AND idx = ?2 "
    "AND fulfilled_at IS NULL";
static const char SQL_DIFFS_DROP[] =
    "DELETE FROM diffs WHERE run_a = ?1 OR run_b = ?1 OR truth = ?1";
static const char SQL_MATRIX_DROP[] =
    "DELETE FROM matrix_cache WHERE model_id = (SELECT model_id FROM runs WHERE id = ?1)";

int
srv_db_request_add(struct srv_db *db, const char *run_id, int index, const char *reason,
                   const char *other_run, int64_t now, int *added, struct gd_err *err)
{
    struct srv_stmt *st;
    *added = 0;
    int rc = srv_db_prepare(db, SQL_REQ_ADD, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    srv_stmt_bind_text(st, 3, reason);
    srv_stmt_bind_text(st, 4, other_run ? other_run : "");
    srv_stmt_bind_int64(st, 5, now);
    int s = srv_stmt_step(st, "request insert", err);
    if (s == SRV_SQL_DONE)
        *added = srv_stmt_changes(st) > 0;
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}

int
srv_db_requests_list(struct srv_db *db, const char *run_id, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_EXISTS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    int s = srv_stmt_step(st, "run lookup", err);
    srv_stmt_done(st);
    if (s != SRV_SQL_ROW)
        return s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id) : s;
    rc = srv_db_prepare(db, SQL_REQ_LIST, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    json_t *list = json_array(), *pending = json_array();
    while ((s = srv_stmt_step(st, "requests lookup", err)) == SRV_SQL_ROW) {
        int idx = srv_stmt_int(st, 0);
        int open = srv_stmt_null(st, 5);
        json_t *r = json_pack("{s:i, s:s, s:s, s:s, s:I}", "index", idx, "name",
                              srv_stmt_text(st, 1), "reason", srv_stmt_text(st, 2), "other_run",
                              srv_stmt_text(st, 3), "requested_at",
                              (json_int_t)srv_stmt_int64(st, 4));
        json_object_set_new(r, "fulfilled_at",
                            open ? json_null() : json_integer(srv_stmt_int64(st, 5)));
        json_array_append_new(list, r);
        if (open)
            json_array_append_new(pending, json_integer(idx));
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE) {
        json_decref(list);
        json_decref(pending);
        return s;
    }
    *out = json_pack("{s:s, s:o, s:o}", "run", run_id, "pending", pending, "requests", list);
    return 0;
}

int
srv_db_layers_present(struct srv_db *db, const char *run_id, int n, unsigned char *present,
                      struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_PRESENT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    memset(present, 0, (size_t)n);
    int s;
    while ((s = srv_stmt_step(st, "layers lookup", err)) == SRV_SQL_ROW) {
        int idx = srv_stmt_int(st, 0);
        if (idx >= 0 && idx < n)
            present[idx] = (unsigned char)srv_stmt_int(st, 1);
    }
    srv_stmt_done(st);
    return s == SRV_SQL_DONE ? 0 : s;
}

int
srv_db_layer_fetched(struct srv_db *db, const char *run_id, int index, int64_t now,
                     struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_REQ_FULFIL, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, index);
    srv_stmt_bind_int64(st, 3, now);
    rc = srv_stmt_exec(st, "request update", err);
    /* a diff of this run measured the layer from its fingerprint: it is stale now */
    for (int q = 0; q < 2 && rc == 0; q++) {
        rc = srv_db_prepare(db, q == 0 ? SQL_DIFFS_DROP : SQL_MATRIX_DROP, &st, err);
        if (rc != 0)
            break;
        srv_stmt_bind_text(st, 1, run_id);
        rc = srv_stmt_exec(st, q == 0 ? "diff cache drop" : "matrix cache drop", err);
    }
    return rc;
}
