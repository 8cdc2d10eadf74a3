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
    "state, received_at, n_layers, content_sha256, meta, device, owner_token) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'uploading', ?9, ?10, ?11, ?12, ?13, ?14)";
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
insert_layer(struct srv_db *db, const struct srv_run_doc *doc, const struct srv_layer_doc *l,
             int64_t now, int *linked, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_BLOB_SIZE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, l->sha256);
    int s = srv_stmt_step(st, "blob lookup", err);
    /* Data already stored under this hash is this layer's data: link it, no upload needed. */
    *linked = s == SRV_SQL_ROW && (uint64_t)srv_stmt_int64(st, 0) == l->raw_size;
    srv_stmt_done(st);
    if (s < 0)
        return s;
    rc = srv_db_prepare(db, SQL_LAYER_INSERT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, doc->id);
    srv_stmt_bind_int64(st, 2, l->index);
    srv_stmt_bind_text(st, 3, l->name);
    srv_stmt_bind_text(st, 4, l->op);
    srv_stmt_bind_text(st, 5, gd_dtype_name(l->dtype));
    srv_stmt_bind_text(st, 6, l->shape_json);
    srv_stmt_bind_text(st, 7, l->sha256);
    srv_stmt_bind_int64(st, 8, (int64_t)l->raw_size);
    if (l->reduction_len > 0)
        srv_stmt_bind_int64(st, 9, l->reduction_len);
    if (l->discontinuous >= 0)
        srv_stmt_bind_int64(st, 10, l->discontinuous);
    srv_stmt_bind_text(st, 11, l->record);
    if (*linked) {
        srv_stmt_bind_int64(st, 12, now);
        srv_stmt_bind_text(st, 13, l->sha256);
    }
    return srv_stmt_exec(st, "layer insert", err);
}

int
srv_db_run_create(struct srv_db *db, const struct srv_run_doc *doc, int64_t now, int *created,
                  struct gd_err *err)
{
    struct srv_stmt *st = NULL;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RUN_CONTENT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, doc->id);
    int s = srv_stmt_step(st, "run lookup", err);
    if (s == SRV_SQL_ROW) {
        int same = strcmp(srv_stmt_text(st, 0), doc->content_sha256) == 0;
        srv_stmt_done(st);
        if (!same)
            rc = gd_err_set(err, SRV_ECONFLICT,
                            "run %s exists with other content (a run id is used once)", doc->id);
        *created = 0;
        goto done;
    }
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }

    rc = srv_db_prepare(db, SQL_MODEL_ADD, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, doc->model_name);
    srv_stmt_bind_int64(st, 2, now);
    rc = srv_stmt_exec(st, "model insert", err);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_MODEL_ID, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, doc->model_name);
    s = srv_stmt_step(st, "model lookup", err);
    int64_t model_id = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : 0;
    srv_stmt_done(st);
    if (s != SRV_SQL_ROW) {
        rc = s < 0 ? s : gd_err_set(err, GD_EIO, "model lookup: the model row is missing");
        goto done;
    }

    rc = srv_db_prepare(db, SQL_RUN_INSERT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, doc->id);
    srv_stmt_bind_int64(st, 2, model_id);
    srv_stmt_bind_text(st, 3, doc->model_sha256);
    srv_stmt_bind_text(st, 4, doc->backend);
    srv_stmt_bind_text(st, 5, doc->gpu);
    srv_stmt_bind_text(st, 6, doc->host);
    srv_stmt_bind_text(st, 7, doc->created_at);
    srv_stmt_bind_int64(st, 8, doc->created_ts);
    srv_stmt_bind_int64(st, 9, now);
    srv_stmt_bind_int64(st, 10, doc->n_layers);
    srv_stmt_bind_text(st, 11, doc->content_sha256);
    srv_stmt_bind_text(st, 12, doc->meta);
    srv_stmt_bind_text(st, 13, doc->device);
    if (doc->owner_token > 0)
        srv_stmt_bind_int64(st, 14, doc->owner_token);
    rc = srv_stmt_exec(st, "run insert", err);
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
time_or_null(struct srv_stmt *st, int col)
{
    if (srv_stmt_null(st, col))
        return json_null();
    char t[32];
    srv_time_format(srv_stmt_int64(st, col), t);
    return json_string(t);
}

int
srv_db_run_get(struct srv_db *db, const char *id, int include_uploading, json_t **out,
               struct gd_err *err)
{
    struct srv_stmt *st;
    json_t *run = NULL, *layers = NULL, *missing = NULL;
    int rc = srv_db_prepare(db, SQL_RUN_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run lookup", err);
    if (s != SRV_SQL_ROW) {
        srv_stmt_done(st);
        return s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id) : s;
    }
    const char *state = srv_stmt_text(st, 1);
    if (strcmp(state, "complete") != 0 && !include_uploading) {
        srv_stmt_done(st);
        /* Until finish a run is not there for readers: the same answer as no run at all. */
        return gd_err_set(err, SRV_ENOTFOUND, "no run %s", id);
    }
    run = json_loads(srv_stmt_text(st, 0), 0, NULL);
    if (run == NULL) {
        srv_stmt_done(st);
        return gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
    }
    json_object_set_new(run, "state", json_string(state));
    json_object_set_new(run, "received_at", time_or_null(st, 2));
    json_object_set_new(run, "finished_at", time_or_null(st, 3));
    json_object_set_new(run, "trimmed_at", time_or_null(st, 4));
    srv_stmt_done(st);

    rc = srv_db_prepare(db, SQL_RUN_LAYERS, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, id);
    layers = json_array();
    missing = json_array();
    int present = 0, idx = 0;
    while ((s = srv_stmt_step(st, "layers lookup", err)) == SRV_SQL_ROW) {
        json_t *rec = json_loads(srv_stmt_text(st, 0), 0, NULL);
        if (rec == NULL) {
            rc = gd_err_set(err, GD_EIO, "run %s: a stored layer record is not JSON", id);
            break;
        }
        int here = srv_stmt_int(st, 1);
        json_object_set_new(rec, "present", json_boolean(here));
        json_object_set_new(rec, "stored", json_boolean(srv_stmt_int(st, 2)));
        json_array_append_new(layers, rec);
        if (here)
            present++;
        else
            json_array_append_new(missing, json_integer(idx));
        idx++;
    }
    srv_stmt_done(st);
    if (rc == 0 && s < 0)
        rc = s;
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
    struct srv_stmt *st;
    json_t *m = NULL, *recs = NULL;
    int rc = srv_db_prepare(db, SQL_RUN_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run lookup", err);
    if (s != SRV_SQL_ROW) {
        srv_stmt_done(st);
        return s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id) : s;
    }
    if (strcmp(srv_stmt_text(st, 1), "complete") != 0)
        rc = gd_err_set(err, SRV_ECONFLICT,
                        "run %s is still uploading: it can be compared once it is finished", id);
    else if (!srv_stmt_null(st, 4))
        rc = gd_err_set(err, SRV_EGONE,
                        "the tensors of run %s were dropped by retention: it can no longer be "
                        "compared with a run it was not compared with before",
                        id);
    else if ((m = json_loads(srv_stmt_text(st, 0), 0, NULL)) == NULL)
        rc = gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON", id);
    srv_stmt_done(st);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_RUN_RECORDS, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, id);
    recs = json_array();
    while (rc == 0 && (s = srv_stmt_step(st, "layers lookup", err)) == SRV_SQL_ROW) {
        json_t *rec = json_loads(srv_stmt_text(st, 0), 0, NULL);
        if (rec == NULL || json_array_append_new(recs, rec) != 0)
            rc = gd_err_set(err, GD_EIO, "run %s: a stored layer record is not JSON", id);
    }
    srv_stmt_done(st);
    if (rc == 0 && s < 0)
        rc = s;
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
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_RUN_STATE, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run lookup", err);
    if (s != SRV_SQL_ROW) {
        srv_stmt_done(st);
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", id) : s;
        goto done;
    }
    int complete = strcmp(srv_stmt_text(st, 0), "complete") == 0;
    int n_layers = srv_stmt_int(st, 1);
    srv_stmt_done(st);
    if (complete)
        goto done; /* finishing twice is finishing once */

    rc = srv_db_prepare(db, SQL_RUN_MISSING, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, id);
    char list[160] = "";
    size_t used = 0;
    int n_missing = 0;
    while ((s = srv_stmt_step(st, "layers lookup", err)) == SRV_SQL_ROW) {
        if (n_missing < 10 && used < sizeof list - 16)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", n_missing ? ", " : "",
                                     srv_stmt_int(st, 0));
        n_missing++;
    }
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
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
    srv_stmt_bind_text(st, 1, id);
    srv_stmt_bind_int64(st, 2, now);
    rc = srv_stmt_exec(st, "run update", err);
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_COUNTS, &st, err);
    if (rc != 0)
        return rc;
    *uploading = *complete = 0;
    int s;
    while ((s = srv_stmt_step(st, "run counts", err)) == SRV_SQL_ROW) {
        if (strcmp(srv_stmt_text(st, 0), "complete") == 0)
            *complete = srv_stmt_int64(st, 1);
        else
            *uploading = srv_stmt_int64(st, 1);
    }
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}

static const char SQL_RUN_OWNER[] = "SELECT owner_token FROM runs WHERE id = ?1";

int
srv_db_run_owner(struct srv_db *db, const char *id, int64_t *owner, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_OWNER, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run owner", err);
    if (s == SRV_SQL_ROW)
        *owner = srv_stmt_null(st, 0) ? 0 : srv_stmt_int64(st, 0);
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no run %s", id);
    return s < 0 ? s : 0;
}

static const char SQL_RUN_SIZE[] =
    "SELECT r.n_layers, (SELECT max(raw_size) FROM layers WHERE run_id = r.id) FROM runs r "
    "WHERE r.id = ?1";

int
srv_db_run_size(struct srv_db *db, const char *id, int64_t *n_layers, int64_t *max_layer_bytes,
                struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_SIZE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "run size", err);
    if (s == SRV_SQL_ROW) {
        *n_layers = srv_stmt_int64(st, 0);
        *max_layer_bytes = srv_stmt_int64(st, 1);
    }
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no run %s", id);
    return s < 0 ? s : 0;
}
