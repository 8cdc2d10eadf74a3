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
    "LEFT JOIN baselines b ON b.model_id = m.id GROUP BY m.id, m.name, b.run_id ORDER BY m.name";
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
    "SELECT device, id, backend, gpu, created_at, meta FROM (SELECT device, id, backend, gpu, "
    "created_at, meta, row_number() OVER (PARTITION BY device ORDER BY created_ts DESC, id DESC) "
    "AS k FROM runs WHERE model_id = ?1 AND state = 'complete' AND trimmed_at IS NULL) AS newest "
    "WHERE k = 1 ORDER BY device";
static const char SQL_HISTORY_RUNS[] =
    "SELECT device, id, created_at, meta FROM (SELECT device, id, created_at, created_ts, meta, "
    "row_number() OVER (PARTITION BY device ORDER BY created_ts DESC, id DESC) AS k FROM runs "
    "WHERE model_id = ?1 AND state = 'complete' AND (CAST(?2 AS TEXT) IS NULL OR device = ?2)) "
    "AS newest WHERE k <= ?3 ORDER BY device, created_ts, id";
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_MODELS, &st, err);
    if (rc != 0)
        return rc;
    json_t *models = json_array();
    int s;
    while ((s = srv_stmt_step(st, "models query", err)) == SRV_SQL_ROW) {
        json_t *m = json_object();
        char latest[32];
        srv_time_format(srv_stmt_int64(st, 2), latest);
        json_object_set_new(m, "name", json_string(srv_stmt_text(st, 0)));
        json_object_set_new(m, "runs", json_integer(srv_stmt_int64(st, 1)));
        json_object_set_new(m, "latest", json_string(latest));
        json_object_set_new(m, "baseline",
                            srv_stmt_null(st, 3) ? json_null()
                                                 : json_string(srv_stmt_text(st, 3)));
        json_array_append_new(models, m);
    }
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(models);
        return s;
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_MODEL_BASELINE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, model);
    int s = srv_stmt_step(st, "model lookup", err);
    if (s == SRV_SQL_ROW) {
        if (id != NULL)
            *id = srv_stmt_int64(st, 0);
        if (baseline != NULL)
            snprintf(baseline, 40, "%s", srv_stmt_text(st, 1));
    } else {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no model %s", model) : s;
    }
    srv_stmt_done(st);
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
    struct srv_stmt *st;
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
    srv_stmt_bind_text(st, 1, run_id);
    int s = srv_stmt_step(st, "run lookup", err);
    if (s != SRV_SQL_ROW) {
        srv_stmt_done(st);
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no run %s", run_id) : s;
        goto done;
    }
    int64_t run_model = srv_stmt_int64(st, 0);
    int complete = strcmp(srv_stmt_text(st, 1), "complete") == 0;
    char other[160];
    snprintf(other, sizeof other, "%s", srv_stmt_text(st, 2));
    srv_stmt_done(st);
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
    srv_stmt_bind_int64(st, 1, id);
    srv_stmt_bind_text(st, 2, run_id);
    srv_stmt_bind_int64(st, 3, now);
    if (token_id > 0)
        srv_stmt_bind_int64(st, 4, token_id);
    rc = srv_stmt_exec(st, "baseline update", err);
    if (rc != 0)
        goto done;
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
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_RUN_BASELINE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    int s = srv_stmt_step(st, "baseline lookup", err);
    baseline[0] = '\0';
    if (s == SRV_SQL_ROW)
        snprintf(baseline, 40, "%s", srv_stmt_text(st, 0));
    else if (s < 0)
        rc = s;
    srv_stmt_done(st);
    return rc;
}

static json_t *
text_or_null(struct srv_stmt *st, int col)
{
    const char *t = srv_stmt_text(st, col);
    return t[0] != '\0' ? json_string(t) : json_null();
}

/*
 * web: what tells a matrix's devices apart beyond their keys, from the run's stored meta:
 * the versions and host of its env, its knobs and labels (a filter and a label each).
 */
static void
device_facts(json_t *d, const char *meta_text)
{
    static const char *const env_keys[] = {"driver", "cuda_runtime", "cudnn", "cublas",
                                           "host",   "labels",       NULL};
    json_t *meta = json_loads(meta_text, 0, NULL);
    json_t *env = json_object_get(meta, "env"), *facts = json_object();
    for (int i = 0; env_keys[i] != NULL; i++) {
        json_t *v = json_object_get(env, env_keys[i]);
        json_object_set(facts, env_keys[i], v != NULL ? v : json_null());
    }
    json_t *knobs = json_object_get(meta, "knobs"), *labels = json_object_get(meta, "labels");
    json_object_set_new(d, "env", facts);
    json_object_set(d, "knobs", json_is_object(knobs) ? knobs : json_null());
    json_object_set(d, "labels", json_is_object(labels) ? labels : json_null());
    json_decref(meta);
}

int
srv_db_model_devices(struct srv_db *db, const char *model, json_t **out, struct gd_err *err)
{
    int64_t id = 0;
    int rc = model_id(db, model, &id, err);
    struct srv_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_DEVICES, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, id);
    json_t *devices = json_array();
    int s;
    while ((s = srv_stmt_step(st, "devices query", err)) == SRV_SQL_ROW) {
        json_t *d = json_object();
        json_object_set_new(d, "key", json_string(srv_stmt_text(st, 0)));
        json_object_set_new(d, "run", json_string(srv_stmt_text(st, 1)));
        json_object_set_new(d, "backend", json_string(srv_stmt_text(st, 2)));
        json_object_set_new(d, "gpu", text_or_null(st, 3));
        json_object_set_new(d, "created_at", json_string(srv_stmt_text(st, 4)));
        device_facts(d, srv_stmt_text(st, 5));
        json_array_append_new(devices, d);
    }
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(devices);
        return s;
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
    struct srv_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_HISTORY_RUNS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, id);
    srv_stmt_bind_text(st, 2, device);
    srv_stmt_bind_int64(st, 3, limit);
    json_t *runs = json_array();
    int s;
    while (rc == 0 && (s = srv_stmt_step(st, "history query", err)) == SRV_SQL_ROW) {
        json_t *meta = json_loads(srv_stmt_text(st, 3), 0, NULL);
        if (meta == NULL) {
            rc = gd_err_set(err, GD_EIO, "run %s: stored metadata is not JSON",
                            srv_stmt_text(st, 1));
            break;
        }
        json_t *env = json_object_get(meta, "env");
        json_t *r = json_object();
        json_object_set_new(r, "device", json_string(srv_stmt_text(st, 0)));
        json_object_set_new(r, "run", json_string(srv_stmt_text(st, 1)));
        json_object_set_new(r, "created_at", json_string(srv_stmt_text(st, 2)));
        json_object_set_new(r, "env", json_is_object(env) ? json_incref(env) : json_object());
        json_array_append_new(runs, r);
        json_decref(meta);
    }
    srv_stmt_done(st);
    if (rc == 0 && s < 0)
        rc = s;
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
    struct srv_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_RUN_IDS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, id);
    srv_stmt_bind_int64(st, 2, limit);
    json_t *ids = json_array();
    int s;
    while ((s = srv_stmt_step(st, "runs query", err)) == SRV_SQL_ROW)
        json_array_append_new(ids, json_string(srv_stmt_text(st, 0)));
    srv_stmt_done(st);
    if (s < 0) {
        json_decref(ids);
        return s;
    }
    *out = ids;
    return 0;
}

int
srv_db_layer_named(struct srv_db *db, const char *run_id, const char *name, int *found,
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_LAYER_NAMED, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_text(st, 2, name);
    int s = srv_stmt_step(st, "layer lookup", err);
    *found = s == SRV_SQL_ROW;
    if (s < 0)
        rc = s;
    srv_stmt_done(st);
    return rc;
}
