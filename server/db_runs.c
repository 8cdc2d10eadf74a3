/*
 * db_runs.c: runs: created from a checked run.json, returned whole, finished, counted
 * (the listing is db_runs_list.c).
 */
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "run_doc.h"

static const char SQL_RUN_CONTENT[] = "SELECT content_sha256 FROM runs WHERE id = ?1";
static const char SQL_MODEL_ADD[] =
    "INSERT INTO models(name, created_at) VALUES(?1, ?2) ON CONFLICT(name) DO NOTHING";
static const char SQL_MODEL_ID[] = "SELECT id FROM models WHERE name = ?1";
static const char SQL_RUN_INSERT[] =
    "INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, created_ts, "
    "state, received_at, n_layers, content_sha256, meta, device) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'uploading', ?9, ?10, ?11, ?12, ?13)";
static const char SQL_BLOB_SIZE[] = "SELECT raw_size FROM blobs WHERE sha256 = ?1";
static const char SQL_LAYER_INSERT[] =
    "INSERT INTO layers(run_id, idx, name, op, dtype, shape, sha256, raw_size, reduction_len, "
    "discontinuous, record, uploaded_at, blob_sha256) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char SQL_RUN_GET[] =
    "SELECT meta, state, received_at, finished_at, trimmed_at FROM runs WHERE id = ?1";
static const char SQL_RUN_LAYERS[] =
    "SELECT record, uploaded_at IS NOT NULL, blob_sha256 IS NOT NULL FROM layers "
    "WHERE run_id = ?1 ORDER BY idx";
static const char SQL_RUN_RECORDS[] = "SELECT record FROM layers WHERE run_id = ?1 ORDER BY idx";
static const char SQL_RUN_STATE[] = "SELECT state, n_layers FROM runs WHERE id = ?1";
static const char SQL_RUN_MISSING[] =
    "SELECT idx FROM layers WHERE run_id = ?1 AND uploaded_at IS NULL AND sha256 <> '' "
    "ORDER BY idx"; /* fp: '' is a fingerprint's layer, fetched later or never */
static const char SQL_RUN_COMPLETE[] =
    "UPDATE runs SET state = 'complete', finished_at = ?2 WHERE id = ?1";
static const char SQL_RUN_COUNTS[] = "SELECT state, count(*) FROM runs GROUP BY state";

static int
step_fail(struct srv_db *db, int rc, const char *what, struct gd_err *err)
{
    return srv_db_fail(db, rc, what, err);
}

/* Runs one statement that returns no row. */
static int
step_done(struct srv_db *db, sqlite3_stmt *st, const char *what, struct gd_err *err)
{
    int rc = sqlite3_step(st);
    srv_db_done(st);
    return rc == SQLITE_DONE ? 0 : step_fail(db, rc, what, err);
}

static int
insert_layer(struct srv_db *db, const struct srv_run_doc *doc, const struct srv_layer_doc *l,
             int64_t now, int *linked, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_BLOB_SIZE, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, l->sha256);
    int s = sqlite3_step(st);
    /* Data already stored under this hash is this layer's data: link it, no upload needed. */
    *linked = s == SQLITE_ROW && (uint64_t)sqlite3_column_int64(st, 0) == l->raw_size;
    srv_db_done(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return step_fail(db, s, "blob lookup", err);
    rc = srv_db_prepare(db, SQL_LAYER_INSERT, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, doc->id);
    sqlite3_bind_int(st, 2, l->index);
    srv_db_bind_text(st, 3, l->name);
    srv_db_bind_text(st, 4, l->op);
    srv_db_bind_text(st, 5, gd_dtype_name(l->dtype));
    srv_db_bind_text(st, 6, l->shape_json);
    srv_db_bind_text(st, 7, l->sha256);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)l->raw_size);
    if (l->reduction_len > 0)
        sqlite3_bind_int64(st, 9, l->reduction_len);
    if (l->discontinuous >= 0)
        sqlite3_bind_int(st, 10, l->discontinuous);
    srv_db_bind_text(st, 11, l->record);
    if (*linked) {
        sqlite3_bind_int64(st, 12, now);
        srv_db_bind_text(st, 13, l->sha256);
    }
    return step_done(db, st, "layer insert", err);
}

int
srv_db_run_create(struct srv_db *db, const struct srv_run_doc *doc, int64_t now, int *created,
                  struct gd_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RUN_CONTENT, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, doc->id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        int same = strcmp((const char *)sqlite3_column_text(st, 0), doc->content_sha256) == 0;
        srv_db_done(st);
        if (!same)
            rc = gd_err_set(err, SRV_ECONFLICT,
                            "run %s exists with other content (a run id is used once)", doc->id);
        *created = 0;
        goto done;
    }
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = step_fail(db, s, "run lookup", err);
        goto done;
    }

    rc = srv_db_prepare(db, SQL_MODEL_ADD, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, doc->model_name);
    sqlite3_bind_int64(st, 2, now);
    rc = step_done(db, st, "model insert", err);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_MODEL_ID, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, doc->model_name);
    s = sqlite3_step(st);
    int64_t model_id = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    srv_db_done(st);
    if (s != SQLITE_ROW) {
        rc = step_fail(db, s, "model lookup", err);
        goto done;
    }

    rc = srv_db_prepare(db, SQL_RUN_INSERT, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, doc->id);
    sqlite3_bind_int64(st, 2, model_id);
    srv_db_bind_text(st, 3, doc->model_sha256);
    srv_db_bind_text(st, 4, doc->backend);
    srv_db_bind_text(st, 5, doc->gpu);
    srv_db_bind_text(st, 6, doc->host);
    srv_db_bind_text(st, 7, doc->created_at);
    sqlite3_bind_int64(st, 8, doc->created_ts);
    sqlite3_bind_int64(st, 9, now);
    sqlite3_bind_int(st, 10, doc->n_layers);
    srv_db_bind_text(st, 11, doc->content_sha256);
    srv_db_bind_text(st, 12, doc->meta);
    srv_db_bind_text(st, 13, doc->device);
    rc = step_done(db, st, "run insert", err);
    int n_linked = 0;
    for (int i = 0; rc == 0 && i < doc->n_layers; i++) {
        int linked = 0;
        rc = insert_layer(db, doc, &doc->layers[i], now, &linked, err);
        n_linked += linked;
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    if (rc == 0) {
        *created = 1;
        srv_metrics_add(SRV_M_RUNS_CREATED, 1);
        srv_metrics_add(SRV_M_BLOBS_DEDUP, (uint64_t)n_linked);
    }
done:
    srv_db_rollback(db);
    return rc;
}

static json_t *
time_or_null(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    char t[32];
    srv_time_format(sqlite3_column_int64(st, col), t);
    return json_string(t);
}

int
srv_db_run_get(struct srv_db *db, const char *id, int include_uploading, json_t **out,
               struct gd_err *err)
{
    sqlite3_stmt *st;
    json_t *run = NULL, *layers = NULL, *missing = NULL;
    int rc = srv_db_prepare(db, SQL_RUN_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        srv_db_done(st);
        return s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id)
                                : step_fail(db, s, "run lookup", err);
    }
    const char *state = (const char *)sqlite3_column_text(st, 1);
    if (strcmp(state, "complete") != 0 && !include_uploading) {
        srv_db_done(st);
        /* Until finish a run is not there for readers: the same answer as no run at all. */
        return gd_err_set(err, SRV_ENOTFOUND, "no run %s", id);
    }
    run = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    if (run == NULL) {
        srv_db_done(st);
        return gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
    }
    json_object_set_new(run, "state", json_string(state));
    json_object_set_new(run, "received_at", time_or_null(st, 2));
    json_object_set_new(run, "finished_at", time_or_null(st, 3));
    json_object_set_new(run, "trimmed_at", time_or_null(st, 4));
    srv_db_done(st);

    rc = srv_db_prepare(db, SQL_RUN_LAYERS, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, id);
    layers = json_array();
    missing = json_array();
    int present = 0, idx = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *rec = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
        if (rec == NULL) {
            rc = gd_err_set(err, GD_EIO, "run %s: a stored layer record is not JSON", id);
            break;
        }
        int here = sqlite3_column_int(st, 1);
        json_object_set_new(rec, "present", json_boolean(here));
        json_object_set_new(rec, "stored", json_boolean(sqlite3_column_int(st, 2)));
        json_array_append_new(layers, rec);
        if (here)
            present++;
        else
            json_array_append_new(missing, json_integer(idx));
        idx++;
    }
    srv_db_done(st);
    if (rc == 0 && s != SQLITE_DONE)
        rc = step_fail(db, s, "layers lookup", err);
    if (rc != 0)
        goto done;
    json_object_set_new(run, "layers_present", json_integer(present));
    json_object_set_new(run, "layers_missing", missing);
    json_object_set_new(run, "layers", layers);
    missing = layers = NULL;
    *out = run;
    run = NULL;
done:
    json_decref(run);
    json_decref(layers);
    json_decref(missing);
    return rc;
}

int
srv_db_run_records(struct srv_db *db, const char *id, json_t **meta, json_t **records,
                   struct gd_err *err)
{
    sqlite3_stmt *st;
    json_t *m = NULL, *recs = NULL;
    int rc = srv_db_prepare(db, SQL_RUN_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        srv_db_done(st);
        return s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id)
                                : step_fail(db, s, "run lookup", err);
    }
    if (strcmp((const char *)sqlite3_column_text(st, 1), "complete") != 0)
        rc = gd_err_set(err, SRV_ECONFLICT,
                        "run %s is still uploading: it can be compared once it is finished", id);
    else if (sqlite3_column_type(st, 4) != SQLITE_NULL)
        rc = gd_err_set(err, SRV_EGONE,
                        "the tensors of run %s were dropped by retention: it can no longer be "
                        "compared with a run it was not compared with before",
                        id);
    else if ((m = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL)) == NULL)
        rc = gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
    srv_db_done(st);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_RUN_RECORDS, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, id);
    recs = json_array();
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *rec = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
        if (rec == NULL || json_array_append_new(recs, rec) != 0)
            rc = gd_err_set(err, GD_EIO, "run %s: a stored layer record is not JSON", id);
    }
    srv_db_done(st);
    if (rc == 0 && s != SQLITE_DONE)
        rc = step_fail(db, s, "layers lookup", err);
    if (rc != 0)
        goto done;
    *meta = m;
    *records = recs;
    m = recs = NULL;
done:
    json_decref(m);
    json_decref(recs);
    return rc;
}

int
srv_db_run_finish(struct srv_db *db, const char *id, int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RUN_STATE, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        srv_db_done(st);
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id)
                              : step_fail(db, s, "run lookup", err);
        goto done;
    }
    int complete = strcmp((const char *)sqlite3_column_text(st, 0), "complete") == 0;
    int n_layers = sqlite3_column_int(st, 1);
    srv_db_done(st);
    if (complete)
        goto done; /* finishing twice is finishing once */

    rc = srv_db_prepare(db, SQL_RUN_MISSING, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, id);
    char list[160] = "";
    size_t used = 0;
    int n_missing = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (n_missing < 10 && used < sizeof list - 16)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", n_missing ? ", " : "",
                                     sqlite3_column_int(st, 0));
        n_missing++;
    }
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = step_fail(db, s, "layers lookup", err);
        goto done;
    }
    if (n_missing > 0) {
        rc = gd_err_set(err, SRV_EINCOMPLETE, "run %s: %d of %d layers are not uploaded (%s%s)", id,
                        n_missing, n_layers, list, n_missing > 10 ? ", ..." : "");
        goto done;
    }
    rc = srv_db_prepare(db, SQL_RUN_COMPLETE, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, id);
    sqlite3_bind_int64(st, 2, now);
    rc = step_done(db, st, "run update", err);
    /* Its comparison with the baseline, queued in the same commit: never lost. */
    if (rc == 0)
        rc = srv_db_job_queue_run(db, id, now, err);
    if (rc == 0)
        rc = srv_db_replay_finished(db, id, err); /* a replay: its source's diffs again */
    if (rc == 0)
        rc = srv_db_commit(db, err);
    if (rc == 0)
        srv_metrics_add(SRV_M_RUNS_FINISHED, 1);
done:
    srv_db_rollback(db); /* after a commit: nothing is open, nothing happens */
    return rc;
}

int
srv_db_runs_count(struct srv_db *db, int64_t *uploading, int64_t *complete, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_COUNTS, &st, err);
    if (rc != 0)
        return rc;
    *uploading = *complete = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *state = (const char *)sqlite3_column_text(st, 0);
        if (strcmp(state, "complete") == 0)
            *complete = sqlite3_column_int64(st, 1);
        else
            *uploading = sqlite3_column_int64(st, 1);
    }
    srv_db_done(st);
    return s == SQLITE_DONE ? 0 : step_fail(db, s, "run counts", err);
}

static const char SQL_RUN_SIZE[] =
    "SELECT r.n_layers, (SELECT max(raw_size) FROM layers WHERE run_id = r.id) FROM runs r "
    "WHERE r.id = ?1";

int
srv_db_run_size(struct srv_db *db, const char *id, int64_t *n_layers, int64_t *max_layer_bytes,
                struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_SIZE, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *n_layers = sqlite3_column_int64(st, 0);
        *max_layer_bytes = sqlite3_column_int64(st, 1);
    }
    srv_db_done(st);
    if (s == SQLITE_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no run %s", id);
    return s == SQLITE_ROW ? 0 : srv_db_fail(db, s, "run size", err);
}
