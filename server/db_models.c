/* db_models.c: models with their complete runs, and the baseline each is compared against. */
#include <stdio.h>
#include <string.h>

#include "db.h"

static const char SQL_MODELS[] =
    "SELECT m.name, count(r.id), max(r.created_ts), b.run_id FROM models m "
    "JOIN runs r ON r.model_id = m.id AND r.state = 'complete' "
    "LEFT JOIN baselines b ON b.model_id = m.id GROUP BY m.id ORDER BY m.name";
static const char SQL_MODEL_ID[] = "SELECT id FROM models WHERE name = ?1";
static const char SQL_RUN_MODEL[] =
    "SELECT r.model_id, r.state, m.name FROM runs r JOIN models m ON m.id = r.model_id "
    "WHERE r.id = ?1";
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

int
srv_db_baseline_set(struct srv_db *db, const char *model, const char *run_id, int64_t token_id,
                    int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_MODEL_ID, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, model);
    int s = sqlite3_step(st);
    int64_t model_id = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    srv_db_done(st);
    if (s != SQLITE_ROW) {
        rc = s == SQLITE_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no model %s", model)
                              : srv_db_fail(db, s, "model lookup", err);
        goto done;
    }
    rc = srv_db_prepare(db, SQL_RUN_MODEL, &st, err);
    if (rc != 0)
        goto done;
    srv_db_bind_text(st, 1, run_id);
    s = sqlite3_step(st);
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
    if (run_model != model_id) {
        rc = gd_err_set(err, SRV_ECONFLICT, "run %s is a run of model %s, not %s", run_id, other,
                        model);
        goto done;
    }
    rc = srv_db_prepare(db, SQL_BASELINE_SET, &st, err);
    if (rc != 0)
        goto done;
    sqlite3_bind_int64(st, 1, model_id);
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
    rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}
