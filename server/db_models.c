/*
 * db_models.c: models with their complete runs, the baseline each is compared against, and
 * the runs the matrix (the newest per device) and history (a device's runs over time) show.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"

static const char SQL_MODELS[] =
    "SELECT m.name, count(r.id), max(r.created_ts), b.run_id FROM models m "
    "JOIN runs r ON r.model_id = m.id AND r.state = 'complete' "
    "LEFT JOIN baselines b ON b.model_id = m.id GROUP BY m.id ORDER BY m.name";
static const char SQL_RUN_MODEL[] =
    "SELECT r.model_id, r.state, m.name FROM runs r JOIN models m ON m.id = r.model_id "
    "WHERE r.id = ?1";
static const char SQL_MODEL_BASELINE[] =
    "SELECT m.id, b.run_id FROM models m LEFT JOIN baselines b ON b.model_id = m.id "
    "WHERE m.name = ?1";
static const char SQL_RUN_BASELINE[] =
    "SELECT b.run_id FROM runs r JOIN baselines b ON b.model_id = r.model_id "
    "WHERE r.id = ?1 AND r.state = 'complete'";
/*
 * The newest run of each device whose tensors are still there (a matrix compares every pair,
 * most of them new): one walk of runs_by_device per key.
 */
static const char SQL_DEVICES[] =
    "SELECT device, id, backend, gpu, created_at FROM (SELECT device, id, backend, gpu, "
    "created_at, row_number() OVER (PARTITION BY device ORDER BY created_ts DESC, id DESC) AS k "
    "FROM runs WHERE model_id = ?1 AND state = 'complete' AND trimmed_at IS NULL) WHERE k = 1 "
    "ORDER BY device";
static const char SQL_HISTORY_RUNS[] =
    "SELECT device, id, created_at, meta FROM (SELECT device, id, created_at, created_ts, meta, "
    "row_number() OVER (PARTITION BY device ORDER BY created_ts DESC, id DESC) AS k FROM runs "
    "WHERE model_id = ?1 AND state = 'complete' AND (?2 IS NULL OR device = ?2)) "
    "WHERE k <= ?3 ORDER BY device, created_ts, id";
static const char SQL_RUN_IDS[] = "SELECT id FROM runs WHERE model_id = ?1 AND state = 'complete' "
                                  "ORDER BY created_ts DESC, id DESC LIMIT ?2";
static const char SQL_LAYER_NAMED[] = "SELECT 1 FROM layers WHERE run_id = ?1 AND name = ?2";
static const char SQL_BASELINE_SET[] =
    "INSERT INTO baselines(model_id, run_id, set_at, set_by) VALUES(?1, ?2, ?3, ?4) "
    "ON CONFLICT(model_id) DO UPDATE SET run_id = excluded.run_id, set_at = excluded.set_at, "
    "set_by = excluded.set_by";

int
srv_db_models_list(struct srv_db *db, json_t **out, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_MODELS, &st, err);
    if (rc != 0)
        return rc;
    json_t *models = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *m = json_object();
        char latest[32];
        srv_time_format(sqlite3_column_int64(st, 2), latest);
        json_object_set_new(m, "name", json_string((const char *)sqlite3_column_text(st, 0)));
        json_object_set_new(m, "runs", json_integer(sqlite3_column_int64(st, 1)));
        json_object_set_new(m, "latest", json_string(latest));
        json_object_set_new(m, "baseline",
                            sqlite3_column_type(st, 3) == SQLITE_NULL
                                ? json_null()
                                : json_string((const char *)sqlite3_column_text(st, 3)));
        json_array_append_new(models, m);
    }
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        json_decref(models);
        return srv_db_fail(db, s, "models query", err);
    }
    *out = json_pack("{s:o}", "models", models);
    return *out != NULL ? 0 : gd_err_set(err, GD_ENOMEM, "out of memory");
}

/*
 * The model's row: its id and its baseline run ("" when it has none), each when asked for;
 * SRV_ENOTFOUND when there is no such model.
 */
static int
model_lookup(struct srv_db *db, const char *model, int64_t *id, char baseline[40],
             struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_MODEL_BASELINE, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, model);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        if (id != NULL)
            *id = sqlite3_column_int64(st, 0);
        if (baseline != NULL)
            snprintf(baseline, 40, "%s",
                     sqlite3_column_type(st, 1) == SQLITE_NULL
                         ? ""
                         : (const char *)sqlite3_column_text(st, 1));
    } else {
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no model %s", model)
                              : srv_db_fail(db, s, "model lookup", err);
    }
    srv_db_done(st);
    return rc;
}

static int
model_id(struct srv_db *db, const char *model, int64_t *id, struct gd_err *err)
{
    return model_lookup(db, model, id, NULL, err);
}

int
srv_db_baseline_set(struct srv_db *db, const char *model, const char *run_id, int64_t token_id,
                    int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    int64_t id = 0;
    rc = model_id(db, model, &id, err);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_RUN_MODEL, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, run_id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        srv_db_done(st);
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id)
                              : srv_db_fail(db, s, "run lookup", err);
        goto done;
    }
    int64_t run_model = sqlite3_column_int64(st, 0);
    int complete = strcmp((const char *)sqlite3_column_text(st, 1), "complete") == 0;
    char other[160];
    snprintf(other, sizeof other, "%s", (const char *)sqlite3_column_text(st, 2));
    srv_db_done(st);
    if (!complete) {
        /* An unfinished run is invisible to readers: say so as for no run. */
        rc = gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id);
        goto done;
    }
    if (run_model != id) {
        rc = gd_err_set(err, SRV_ECONFLICT, "run %s is a run of model %s, not %s", run_id, other,
                        model);
        goto done;
    }
    char old[40] = "";
    rc = srv_db_model_baseline(db, model, old, err);
    if (rc != 0)
        goto done;
    rc = srv_db_prepare(db, SQL_BASELINE_SET, &st, err);
    if (rc != 0)
        goto done;
    sqlite3_bind_int64(st, 1, id);
    srv_db_bind_text(st, 2, run_id);
    sqlite3_bind_int64(st, 3, now);
    if (token_id > 0)
        sqlite3_bind_int64(st, 4, token_id);
    s = sqlite3_step(st);
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        rc = srv_db_fail(db, s, "baseline update", err);
        goto done;
    }
    /* The comparisons of the model's runs with it, queued in the same commit. */
    rc = srv_db_job_queue_model(db, id, old, run_id, SRV_BASELINE_RUNS, now, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}

int
srv_db_model_baseline(struct srv_db *db, const char *model, char baseline[40], struct gd_err *err)
{
    return model_lookup(db, model, NULL, baseline, err);
}

int
srv_db_run_baseline(struct srv_db *db, const char *run_id, char baseline[40], struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_BASELINE, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, run_id);
    int s = sqlite3_step(st);
    baseline[0] = '\0';
    if (s == SQLITE_ROW)
        snprintf(baseline, 40, "%s", (const char *)sqlite3_column_text(st, 0));
    else if (s != SQLITE_DONE)
        rc = srv_db_fail(db, s, "baseline lookup", err);
    srv_db_done(st);
    return rc;
}

static json_t *
text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t != NULL && t[0] != '\0' ? json_string((const char *)t) : json_null();
}

int
srv_db_model_devices(struct srv_db *db, const char *model, json_t **out, struct gd_err *err)
{
    int64_t id = 0;
    int rc = model_id(db, model, &id, err);
    sqlite3_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_DEVICES, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    json_t *devices = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *d = json_object();
        json_object_set_new(d, "key", json_string((const char *)sqlite3_column_text(st, 0)));
        json_object_set_new(d, "run", json_string((const char *)sqlite3_column_text(st, 1)));
        json_object_set_new(d, "backend", json_string((const char *)sqlite3_column_text(st, 2)));
        json_object_set_new(d, "gpu", text_or_null(st, 3));
        json_object_set_new(d, "created_at", json_string((const char *)sqlite3_column_text(st, 4)));
        json_array_append_new(devices, d);
    }
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        json_decref(devices);
        return srv_db_fail(db, s, "devices query", err);
    }
    *out = devices;
    return 0;
}

int
srv_db_model_history_runs(struct srv_db *db, const char *model, const char *device, int64_t limit,
                          json_t **out, struct gd_err *err)
{
    int64_t id = 0;
    int rc = model_id(db, model, &id, err);
    sqlite3_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_HISTORY_RUNS, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    srv_db_bind_text(st, 2, device);
    sqlite3_bind_int64(st, 3, limit);
    json_t *runs = json_array();
    int s;
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *meta = json_loads((const char *)sqlite3_column_text(st, 3), 0, NULL);
        if (meta == NULL) {
            rc = gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON",
                            (const char *)sqlite3_column_text(st, 1));
            break;
        }
        json_t *env = json_object_get(meta, "env");
        json_t *r = json_object();
        json_object_set_new(r, "device", json_string((const char *)sqlite3_column_text(st, 0)));
        json_object_set_new(r, "run", json_string((const char *)sqlite3_column_text(st, 1)));
        json_object_set_new(r, "created_at", json_string((const char *)sqlite3_column_text(st, 2)));
        json_object_set_new(r, "env", json_is_object(env) ? json_incref(env) : json_object());
        json_array_append_new(runs, r);
        json_decref(meta);
    }
    srv_db_done(st);
    if (rc == 0 && s != SQLITE_DONE)
        rc = srv_db_fail(db, s, "history query", err);
    if (rc != 0) {
        json_decref(runs);
        return rc;
    }
    *out = runs;
    return 0;
}

int
srv_db_model_run_ids(struct srv_db *db, const char *model, int64_t limit, json_t **out,
                     struct gd_err *err)
{
    int64_t id = 0;
    int rc = model_id(db, model, &id, err);
    sqlite3_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_RUN_IDS, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, limit);
    json_t *ids = json_array();
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(ids, json_string((const char *)sqlite3_column_text(st, 0)));
    srv_db_done(st);
    if (s != SQLITE_DONE) {
        json_decref(ids);
        return srv_db_fail(db, s, "runs query", err);
    }
    *out = ids;
    return 0;
}

int
srv_db_layer_named(struct srv_db *db, const char *run_id, const char *name, int *found,
                   struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_LAYER_NAMED, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, run_id);
    srv_db_bind_text(st, 2, name);
    int s = sqlite3_step(st);
    *found = s == SQLITE_ROW;
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = srv_db_fail(db, s, "layer lookup", err);
    srv_db_done(st);
    return rc;
}
