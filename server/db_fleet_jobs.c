/*
 * db_fleet_jobs.c: fleet_jobs and fleet_tasks (migration 011): a job ("run model M on input
 * X with knobs K on every device matching D") and its tasks, one per target device, fixed
 * when it is submitted; the job document that GET /api/v1/jobs serves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/uuid.h"
#include "db.h"

static const char SQL_FILE_KNOWN[] = "SELECT 1 FROM fleet_files WHERE sha256 = ?1";
static const char SQL_TARGETS[] =
    "SELECT id, key, host, backend, env, labels FROM fleet_devices d WHERE removed_at IS NULL "
    "AND (last_seen >= ?1 OR EXISTS (SELECT 1 FROM fleet_tasks t WHERE t.device_id = d.id "
    "AND t.state = 'leased')) ORDER BY key";
static const char SQL_JOB_ADD[] =
    "INSERT INTO fleet_jobs(id, created_at, model, files, knobs, match_json, lease_seconds, "
    "attempts, deadline, token_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
static const char SQL_TASK_ADD[] =
    "INSERT INTO fleet_tasks(job_id, device_id, state, attempts_used, updated_at) "
    "VALUES(?1, ?2, 'pending', 0, ?3)";
static const char SQL_JOB_GET[] =
    "SELECT id, created_at, model, files, knobs, match_json, lease_seconds, attempts, deadline "
    "FROM fleet_jobs WHERE id = ?1";
static const char SQL_JOB_TASKS[] =
    "SELECT d.id, d.key, d.host, d.backend, d.labels, t.state, t.attempts_used, t.lease_until, "
    "t.run_id, t.error, t.updated_at FROM fleet_tasks t JOIN fleet_devices d "
    "ON d.id = t.device_id WHERE t.job_id = ?1 ORDER BY d.key";
/* Within a second, by their tasks' ids: the order they were submitted in (every job has one). */
static const char SQL_JOBS_LIST[] =
    "SELECT j.id FROM fleet_jobs j ORDER BY j.created_at DESC, "
    "(SELECT max(t.id) FROM fleet_tasks t WHERE t.job_id = j.id) DESC LIMIT ?1";

static const char *const states[5] = {"pending", "leased", "finished", "failed",
                                      "never_answered"};

/* The text a device's value compares as: a string itself, a number or boolean its JSON. */
static int
value_is(json_t *have, const char *want)
{
    if (json_is_string(have))
        return strcmp(json_string_value(have), want) == 0;
    if (!json_is_number(have) && !json_is_boolean(have))
        return 0;
    char *t = json_dumps(have, JSON_ENCODE_ANY | JSON_COMPACT);
    int eq = t != NULL && strcmp(t, want) == 0;
    free(t);
    return eq;
}

int
srv_fleet_match(json_t *match, const char *key, const char *host, const char *backend,
                json_t *env, json_t *labels)
{
    const char *k;
    json_t *want;
    json_object_foreach(match, k, want) {
        json_t *have = NULL;
        if (strcmp(k, "backend") == 0)
            have = json_string(backend);
        else if (strcmp(k, "host") == 0)
            have = json_string(host);
        else if (strcmp(k, "key") == 0)
            have = json_string(key);
        else if (strncmp(k, "env.", 4) == 0)
            have = json_incref(json_object_get(env, k + 4));
        else if (strncmp(k, "labels.", 7) == 0)
            have = json_incref(json_object_get(labels, k + 7));
        int ok = 0;
        if (json_is_string(want)) {
            ok = value_is(have, json_string_value(want));
        } else {
            size_t i;
            json_t *w;
            json_array_foreach(want, i, w) {
                if (json_is_string(w) && value_is(have, json_string_value(w)))
                    ok = 1;
            }
        }
        json_decref(have);
        if (!ok)
            return 0;
    }
    return 1;
}

/* Which of the files' sha256s the daemon lacks (each once), as a new JSON array. */
static int
files_missing(struct srv_db *db, json_t *files, json_t **missing, struct gd_err *err)
{
    json_t *list = json_array();
    size_t i;
    json_t *f;
    int rc = 0;
    json_array_foreach(files, i, f) {
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        size_t j;
        json_t *m;
        int seen = 0;
        json_array_foreach(list, j, m) {
            if (strcmp(json_string_value(m), sha) == 0)
                seen = 1;
        }
        struct srv_stmt *st;
        if (seen)
            continue;
        if ((rc = srv_db_prepare(db, SQL_FILE_KNOWN, &st, err)) != 0)
            break;
        srv_stmt_bind_text(st, 1, sha);
        int s = srv_stmt_step(st, "file lookup", err);
        srv_stmt_done(st);
        if (s < 0)
            rc = s;
        else if (s == SRV_SQL_DONE)
            json_array_append_new(list, json_string(sha));
        if (rc != 0)
            break;
    }
    if (rc != 0) {
        json_decref(list);
        return rc;
    }
    *missing = list;
    return 0;
}

/* The ids of the devices that are targets of a job with match, as a new JSON array. */
static int
targets(struct srv_db *db, json_t *match, int64_t now, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TARGETS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, now - srv_db_fleet_stale_seconds(db));
    json_t *ids = json_array();
    int s;
    while ((s = srv_stmt_step(st, "devices lookup", err)) == SRV_SQL_ROW) {
        json_t *env = srv__fleet_json(srv_stmt_text(st, 4));
        json_t *labels = srv__fleet_json(srv_stmt_text(st, 5));
        if (srv_fleet_match(match, srv_stmt_text(st, 1), srv_stmt_text(st, 2),
                            srv_stmt_text(st, 3), env, labels))
            json_array_append_new(ids, json_string(srv_stmt_text(st, 0)));
        json_decref(env);
        json_decref(labels);
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE) {
        json_decref(ids);
        return s;
    }
    *out = ids;
    return 0;
}

static int
job_insert(struct srv_db *db, const struct srv_fleet_job_in *in, const char *id, int64_t now,
           struct gd_err *err)
{
    char *files = json_dumps(in->files, JSON_COMPACT);
    char *knobs = json_dumps(in->knobs, JSON_COMPACT | JSON_SORT_KEYS);
    char *match = json_dumps(in->match, JSON_COMPACT | JSON_SORT_KEYS);
    struct srv_stmt *st;
    int rc = files && knobs && match ? srv_db_prepare(db, SQL_JOB_ADD, &st, err)
                                     : gd_err_set(err, GD_ENOMEM, "out of memory");
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, id);
        srv_stmt_bind_int64(st, 2, now);
        srv_stmt_bind_text(st, 3, in->model);
        srv_stmt_bind_text(st, 4, files);
        srv_stmt_bind_text(st, 5, knobs);
        srv_stmt_bind_text(st, 6, match);
        srv_stmt_bind_int64(st, 7, in->lease_seconds);
        srv_stmt_bind_int64(st, 8, in->attempts);
        srv_stmt_bind_int64(st, 9, now + in->deadline_seconds);
        if (in->token_id > 0)
            srv_stmt_bind_int64(st, 10, in->token_id);
        rc = srv_stmt_exec(st, "job insert", err);
    }
    free(files);
    free(knobs);
    free(match);
    return rc;
}

int
srv_db_fleet_job_create(struct srv_db *db, const struct srv_fleet_job_in *in, int64_t now,
                        json_t **missing, json_t **out, struct gd_err *err)
{
    char id[40];
    json_t *ids = NULL, *lack = NULL;
    *missing = NULL;
    int rc = gd_uuid_v4(id, err);
    if (rc == 0)
        rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = files_missing(db, in->files, &lack, err);
    if (rc == 0 && json_array_size(lack) > 0) {
        rc = gd_err_set(err, SRV_EMISSING,
                        "%zu of the job's files are not on the daemon: PUT /api/v1/files/{sha256} "
                        "each of \"missing\", then submit again",
                        json_array_size(lack));
        *missing = json_incref(lack);
    }
    if (rc == 0)
        rc = targets(db, in->match, now, &ids, err);
    if (rc == 0 && json_array_size(ids) == 0)
        rc = gd_err_set(err, SRV_ENODEVICE,
                        "no registered device seen in the last %lld s (device-stale-seconds) "
                        "matches the job's match",
                        (long long)srv_db_fleet_stale_seconds(db));
    if (rc == 0)
        rc = job_insert(db, in, id, now, err);
    size_t i;
    json_t *dev;
    json_array_foreach(ids, i, dev) {
        struct srv_stmt *st;
        if (rc != 0 || (rc = srv_db_prepare(db, SQL_TASK_ADD, &st, err)) != 0)
            break;
        srv_stmt_bind_text(st, 1, id);
        srv_stmt_bind_text(st, 2, json_string_value(dev));
        srv_stmt_bind_int64(st, 3, now);
        rc = srv_stmt_exec(st, "task insert", err);
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    json_decref(ids);
    json_decref(lack);
    if (rc == 0)
        rc = srv_db_fleet_job_get(db, id, out, err);
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

static json_t *
text_or_null(struct srv_stmt *st, int col)
{
    return srv_stmt_null(st, col) ? json_null() : json_string(srv_stmt_text(st, col));
}

/* The tasks of job id with their counts. */
static int
job_tasks(struct srv_db *db, const char *id, json_t **tasks, json_t **counts, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_TASKS, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    json_int_t n[5] = {0};
    json_t *list = json_array();
    int s;
    while ((s = srv_stmt_step(st, "tasks lookup", err)) == SRV_SQL_ROW) {
        const char *state = srv_stmt_text(st, 5);
        for (int k = 0; k < 5; k++)
            n[k] += strcmp(state, states[k]) == 0;
        char updated[32];
        srv_time_format(srv_stmt_int64(st, 10), updated);
        json_t *device = json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", srv_stmt_text(st, 0), "key",
                                   srv_stmt_text(st, 1), "host", srv_stmt_text(st, 2), "backend",
                                   srv_stmt_text(st, 3), "labels",
                                   srv__fleet_json(srv_stmt_text(st, 4)));
        json_array_append_new(
            list, json_pack("{s:o,s:s,s:I,s:o,s:o,s:o,s:s}", "device", device, "state", state,
                            "attempts_used", (json_int_t)srv_stmt_int64(st, 6), "lease_until",
                            state[0] == 'l' ? time_or_null(st, 7) : json_null(), "run_id",
                            text_or_null(st, 8), "error", text_or_null(st, 9), "updated",
                            updated));
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE) {
        json_decref(list);
        return s;
    }
    *tasks = list;
    *counts = json_pack("{s:I,s:I,s:I,s:I,s:I}", states[0], n[0], states[1], n[1], states[2],
                        n[2], states[3], n[3], states[4], n[4]);
    return 0;
}

int
srv_db_fleet_job_get(struct srv_db *db, const char *id, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_GET, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, id);
    int s = srv_stmt_step(st, "job lookup", err);
    json_t *doc = NULL;
    if (s == SRV_SQL_ROW) {
        char created[32], deadline[32];
        srv_time_format(srv_stmt_int64(st, 1), created);
        srv_time_format(srv_stmt_int64(st, 8), deadline);
        json_t *files = json_loads(srv_stmt_text(st, 3), 0, NULL);
        doc = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:I,s:I,s:s}", "id", srv_stmt_text(st, 0),
                        "created", created, "model", srv_stmt_text(st, 2), "files",
                        files != NULL ? files : json_array(), "knobs",
                        srv__fleet_json(srv_stmt_text(st, 4)), "match",
                        srv__fleet_json(srv_stmt_text(st, 5)), "lease_seconds",
                        (json_int_t)srv_stmt_int64(st, 6), "attempts",
                        (json_int_t)srv_stmt_int64(st, 7), "deadline", deadline);
    }
    srv_stmt_done(st);
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no job %s", id);
    if (s < 0)
        return s;
    if (doc == NULL)
        return gd_err_set(err, GD_ENOMEM, "out of memory");
    json_t *tasks = NULL, *counts = NULL;
    rc = job_tasks(db, id, &tasks, &counts, err);
    if (rc != 0) {
        json_decref(doc);
        return rc;
    }
    int open = json_integer_value(json_object_get(counts, "pending")) +
                   json_integer_value(json_object_get(counts, "leased")) >
               0;
    json_object_set_new(doc, "state", json_string(open ? "running" : "done"));
    json_object_set_new(doc, "counts", counts);
    json_object_set_new(doc, "tasks", tasks);
    *out = doc;
    return 0;
}

int
srv_db_fleet_jobs_list(struct srv_db *db, int64_t limit, json_t **out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOBS_LIST, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, limit);
    json_t *ids = json_array();
    int s;
    while ((s = srv_stmt_step(st, "jobs lookup", err)) == SRV_SQL_ROW)
        json_array_append_new(ids, json_string(srv_stmt_text(st, 0)));
    srv_stmt_done(st);
    json_t *jobs = json_array();
    size_t i;
    json_t *id;
    rc = s == SRV_SQL_DONE ? 0 : s;
    json_array_foreach(ids, i, id) {
        json_t *doc = NULL;
        if (rc != 0 || (rc = srv_db_fleet_job_get(db, json_string_value(id), &doc, err)) != 0)
            break;
        json_array_append_new(jobs, doc);
    }
    json_decref(ids);
    if (rc != 0) {
        json_decref(jobs);
        return rc;
    }
    *out = json_pack("{s:o}", "jobs", jobs);
    return 0;
}
