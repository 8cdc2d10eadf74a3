/*
 * db_leases.c: fleet_leases (migrations 011, 012) and the life of a task: taken by a poll
 * (one write transaction, so two daemons on one database never hand out one task twice) as
 * an offer the agent confirms with its first heartbeat within the confirm time (else it is
 * withdrawn: pending again, the attempt not counted), kept alive by heartbeats, ended by
 * done or fail, given back by its agent (released: pending again, not counted), or expired
 * when its lease_until passes (then pending again while attempts are left, else failed with
 * the expiry's error). A pending task past its job's deadline is never_answered when no
 * lease was ever taken, else failed; so is a pending task of a device that was not seen for
 * the stale time and holds no lease: it has left the job's targets. A task finished or
 * failed is never leased again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpudiff/uuid.h"
#include "db.h"

static const char SQL_EXPIRED[] =
    "SELECT t.id, t.lease_id, t.attempts_used, j.attempts, d.key, l.beat_at, l.confirmed_at "
    "FROM fleet_tasks t JOIN fleet_jobs j ON j.id = t.job_id "
    "JOIN fleet_devices d ON d.id = t.device_id LEFT JOIN fleet_leases l ON l.id = t.lease_id "
    "WHERE t.state = 'leased' AND t.lease_until < ?1 ORDER BY t.id LIMIT 1000";
/* A device's leased tasks (a restart of its serve, its removal). */
static const char SQL_DEVICE_LEASED[] =
    "SELECT t.id, t.lease_id, t.attempts_used, j.attempts, d.key, l.beat_at, l.confirmed_at "
    "FROM fleet_tasks t JOIN fleet_jobs j ON j.id = t.job_id "
    "JOIN fleet_devices d ON d.id = t.device_id LEFT JOIN fleet_leases l ON l.id = t.lease_id "
    "WHERE t.state = 'leased' AND t.device_id = ?1 ORDER BY t.id";
/* Devices unseen since ?1 that hold no lease and have a pending task: they leave. */
static const char SQL_STALE_DEVICES[] =
    "SELECT d.id, d.key, d.last_seen FROM fleet_devices d WHERE d.last_seen < ?1 "
    "AND EXISTS (SELECT 1 FROM fleet_tasks t WHERE t.device_id = d.id AND t.state = 'pending') "
    "AND NOT EXISTS (SELECT 1 FROM fleet_tasks t WHERE t.device_id = d.id "
    "AND t.state = 'leased') ORDER BY d.id LIMIT 1000";
static const char SQL_DEVICE_TASKS_NEVER[] =
    "UPDATE fleet_tasks SET state = 'never_answered', error = CAST(?3 AS TEXT), updated_at = ?2 "
    "WHERE device_id = ?1 AND state = 'pending' AND attempts_used = 0";
static const char SQL_DEVICE_TASKS_FAIL[] =
    "UPDATE fleet_tasks SET state = 'failed', error = CAST(?3 AS TEXT), updated_at = ?2 "
    "WHERE device_id = ?1 AND state = 'pending' AND attempts_used > 0";
static const char SQL_TASK_GIVE_BACK[] =
    "UPDATE fleet_tasks SET state = 'pending', lease_id = NULL, lease_until = NULL, "
    "attempts_used = attempts_used - 1, updated_at = ?2 WHERE id = ?1";
static const char SQL_LEASE_END[] =
    "UPDATE fleet_leases SET ended_at = ?2, outcome = CAST(?3 AS TEXT) WHERE id = ?1";
static const char SQL_TASK_REQUEUE[] =
    "UPDATE fleet_tasks SET state = 'pending', lease_id = NULL, lease_until = NULL, "
    "updated_at = ?2 WHERE id = ?1";
static const char SQL_TASK_FAIL[] =
    "UPDATE fleet_tasks SET state = 'failed', lease_id = NULL, lease_until = NULL, "
    "error = CAST(?3 AS TEXT), exit_code = ?4, updated_at = ?2 WHERE id = ?1";
static const char SQL_TASK_FINISH[] =
    "UPDATE fleet_tasks SET state = 'finished', lease_id = NULL, lease_until = NULL, "
    "run_id = CAST(?3 AS TEXT), updated_at = ?2 WHERE id = ?1";
static const char SQL_NEVER_ANSWERED[] =
    "UPDATE fleet_tasks SET state = 'never_answered', updated_at = ?1 WHERE state = 'pending' "
    "AND attempts_used = 0 AND job_id IN (SELECT id FROM fleet_jobs WHERE deadline <= ?1)";
static const char SQL_DEADLINE_FAIL[] =
    "UPDATE fleet_tasks SET state = 'failed', updated_at = ?1, error = 'the job''s deadline "
    "passed after a lease expired, before the device took the task again' "
    "WHERE state = 'pending' AND attempts_used > 0 "
    "AND job_id IN (SELECT id FROM fleet_jobs WHERE deadline <= ?1)";
static const char SQL_STALE[] =
    "SELECT count(*) FROM fleet_tasks t WHERE (CAST(?2 AS TEXT) IS NULL OR t.job_id = ?2) "
    "AND ((t.state = 'leased' AND t.lease_until < ?1) OR (t.state = 'pending' AND (t.job_id IN "
    "(SELECT id FROM fleet_jobs WHERE deadline <= ?1) OR t.device_id IN (SELECT d.id FROM "
    "fleet_devices d WHERE d.last_seen < ?3 AND NOT EXISTS (SELECT 1 FROM fleet_tasks l "
    "WHERE l.device_id = d.id AND l.state = 'leased')))))";
static const char SQL_READY[] =
    "SELECT (SELECT count(*) FROM fleet_agents WHERE id = ?1), "
    "(SELECT count(*) FROM fleet_tasks t JOIN fleet_devices d ON d.id = t.device_id "
    "JOIN fleet_jobs j ON j.id = t.job_id WHERE d.agent_id = ?1 AND d.removed_at IS NULL "
    "AND t.state = 'pending' AND t.attempts_used < j.attempts AND j.deadline > ?2), "
    "(SELECT count(*) FROM fleet_tasks WHERE state = 'leased' AND lease_until < ?2)";
static const char SQL_AGENT_SEEN[] = "UPDATE fleet_agents SET last_seen = ?2 WHERE id = ?1";
static const char SQL_DEVICES_SEEN[] =
    "UPDATE fleet_devices SET last_seen = ?2 WHERE agent_id = ?1";
static const char SQL_NEXT_TASK[] =
    "SELECT t.id, t.job_id, d.key, t.attempts_used, j.model, j.files, j.knobs, j.lease_seconds "
    "FROM fleet_tasks t JOIN fleet_devices d ON d.id = t.device_id "
    "JOIN fleet_jobs j ON j.id = t.job_id WHERE d.agent_id = ?1 AND d.removed_at IS NULL "
    "AND t.state = 'pending' AND t.attempts_used < j.attempts AND j.deadline > ?2 "
    "ORDER BY t.id LIMIT 1";
static const char SQL_TASK_LEASE[] =
    "UPDATE fleet_tasks SET state = 'leased', attempts_used = attempts_used + 1, "
    "lease_id = CAST(?2 AS TEXT), lease_until = ?3, updated_at = ?4 "
    "WHERE id = ?1 AND state = 'pending'";
static const char SQL_LEASE_ADD[] =
    "INSERT INTO fleet_leases(id, task_id, attempt, taken_at, beat_at) VALUES(?1, ?2, ?3, ?4, ?4)";
static const char SQL_LIVE[] =
    "SELECT t.id, j.lease_seconds, t.device_id, t.lease_until, l.confirmed_at FROM fleet_tasks t "
    "JOIN fleet_jobs j ON j.id = t.job_id LEFT JOIN fleet_leases l ON l.id = t.lease_id "
    "WHERE t.lease_id = ?1 AND t.state = 'leased'";
static const char SQL_LEASE_OUTCOME[] = "SELECT outcome FROM fleet_leases WHERE id = ?1";
static const char SQL_BEAT_TASK[] =
    "UPDATE fleet_tasks SET lease_until = ?2, updated_at = ?3 WHERE id = ?1";
static const char SQL_BEAT_LEASE[] =
    "UPDATE fleet_leases SET beat_at = ?2, confirmed_at = COALESCE(confirmed_at, ?2) WHERE id = ?1";
static const char SQL_BEAT_DEVICE[] = "UPDATE fleet_devices SET last_seen = ?2 WHERE id = ?1";
static const char SQL_RUN_STATE[] = "SELECT state FROM runs WHERE id = ?1";
static const char SQL_DEVICES_COUNT[] =
    "SELECT count(*) FROM fleet_devices WHERE last_seen >= ?1 AND removed_at IS NULL";
static const char SQL_TASKS_COUNT[] = "SELECT state, count(*) FROM fleet_tasks GROUP BY state";

/* After the commit of an expiry: the leases it ended, for /metrics. */
static void
count_expired(const struct srv_fleet_expired *e)
{
    if (e->requeued + e->failed > 0)
        srv_metrics_add(SRV_M_TASKS_EXPIRED, (uint64_t)(e->requeued + e->failed));
    if (e->withdrawn > 0)
        srv_metrics_add(SRV_M_LEASES_WITHDRAWN, (uint64_t)e->withdrawn);
    if (e->stale > 0)
        srv_metrics_add(SRV_M_TASKS_STALE, (uint64_t)e->stale);
}

/* Binds id and now to a statement that changes one task or lease, and runs it. */
static int
exec2(struct srv_db *db, const char *sql, int64_t id, const char *text_id, int64_t now,
      const char *what, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, sql, &st, err);
    if (rc != 0)
        return rc;
    if (text_id != NULL)
        srv_stmt_bind_text(st, 1, text_id);
    else
        srv_stmt_bind_int64(st, 1, id);
    srv_stmt_bind_int64(st, 2, now);
    return srv_stmt_exec(st, what, err);
}

static int
lease_end(struct srv_db *db, const char *lease_id, int64_t now, const char *outcome,
          struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_LEASE_END, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, lease_id);
    srv_stmt_bind_int64(st, 2, now);
    srv_stmt_bind_text(st, 3, outcome);
    return srv_stmt_exec(st, "lease update", err);
}

static int
task_fail(struct srv_db *db, int64_t task, int64_t now, const char *error, int has_code,
          int64_t code, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_TASK_FAIL, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, task);
    srv_stmt_bind_int64(st, 2, now);
    srv_stmt_bind_text(st, 3, error);
    if (has_code)
        srv_stmt_bind_int64(st, 4, code);
    return srv_stmt_exec(st, "task update", err);
}

struct expired_row {
    int64_t task, used, attempts, beat_at;
    int confirmed;
    char lease[40];
    char key[512];
};

/* The rows of SQL_EXPIRED or SQL_DEVICE_LEASED (bound already), into *rows. */
static int
leased_rows(struct srv_stmt *st, int64_t now, struct expired_row **rows, size_t *n,
            struct gd_err *err)
{
    size_t cap = 0;
    int s;
    *rows = NULL;
    *n = 0;
    while ((s = srv_stmt_step(st, "leases lookup", err)) == SRV_SQL_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            struct expired_row *r = realloc(*rows, cap * sizeof **rows);
            if (r == NULL) {
                s = gd_err_set(err, GD_ENOMEM, "out of memory");
                break;
            }
            *rows = r;
        }
        struct expired_row *r = &(*rows)[(*n)++];
        r->task = srv_stmt_int64(st, 0);
        snprintf(r->lease, sizeof r->lease, "%s", srv_stmt_text(st, 1));
        r->used = srv_stmt_int64(st, 2);
        r->attempts = srv_stmt_int64(st, 3);
        snprintf(r->key, sizeof r->key, "%s", srv_stmt_text(st, 4));
        r->beat_at = srv_stmt_null(st, 5) ? now : srv_stmt_int64(st, 5);
        r->confirmed = !srv_stmt_null(st, 6);
    }
    srv_stmt_done(st);
    return s == SRV_SQL_DONE ? 0 : s;
}

/* A lease given up without a run: its task pending again, the attempt not counted. */
static int
give_back(struct srv_db *db, const char *lease_id, int64_t task, int64_t now, const char *outcome,
          struct gd_err *err)
{
    int rc = lease_end(db, lease_id, now, outcome, err);
    if (rc == 0)
        rc = exec2(db, SQL_TASK_GIVE_BACK, task, NULL, now, "task update", err);
    return rc;
}

/*
 * Ends a lease whose agent is gone: an offer never confirmed is withdrawn; a confirmed one
 * is pending again while attempts are left, else failed with `why` (the attempt counted).
 */
static int
lease_lost(struct srv_db *db, const struct expired_row *r, int64_t now, const char *why,
           struct srv_fleet_expired *out, struct gd_err *err)
{
    if (!r->confirmed) {
        int rc = give_back(db, r->lease, r->task, now, "withdrawn", err);
        out->withdrawn += rc == 0;
        return rc;
    }
    int rc = lease_end(db, r->lease, now, "expired", err);
    if (rc != 0)
        return rc;
    if (r->used < r->attempts) {
        rc = exec2(db, SQL_TASK_REQUEUE, r->task, NULL, now, "task update", err);
        out->requeued += rc == 0;
        return rc;
    }
    char msg[800];
    snprintf(msg, sizeof msg, "%s (attempt %lld of %lld)", why, (long long)r->used,
             (long long)r->attempts);
    rc = task_fail(db, r->task, now, msg, 0, 0, err);
    out->failed += rc == 0;
    return rc;
}

int
srv__fleet_device_leases_end(struct srv_db *db, const char *device_id, int64_t now,
                             const char *outcome, const char *why, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_DEVICE_LEASED, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, device_id);
    struct expired_row *rows = NULL;
    size_t n = 0;
    struct srv_fleet_expired ex = {0};
    rc = leased_rows(st, now, &rows, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (strcmp(outcome, "removed") == 0 && rows[i].confirmed) {
            rc = lease_end(db, rows[i].lease, now, "removed", err);
            if (rc == 0)
                rc = task_fail(db, rows[i].task, now, why, 0, 0, err);
        } else {
            char msg[600];
            snprintf(msg, sizeof msg, "lease lost: %s", why);
            rc = lease_lost(db, &rows[i], now, msg, &ex, err);
        }
    }
    free(rows);
    return rc;
}

int
srv__fleet_device_tasks_end(struct srv_db *db, const char *device_id, int64_t now, const char *why,
                            int64_t *ended, struct gd_err *err)
{
    int rc = 0;
    for (int q = 0; q < 2 && rc == 0; q++) {
        struct srv_stmt *st;
        rc = srv_db_prepare(db, q == 0 ? SQL_DEVICE_TASKS_NEVER : SQL_DEVICE_TASKS_FAIL, &st, err);
        if (rc != 0)
            break;
        srv_stmt_bind_text(st, 1, device_id);
        srv_stmt_bind_int64(st, 2, now);
        srv_stmt_bind_text(st, 3, why);
        int s = srv_stmt_step(st, "task update", err);
        if (s == SRV_SQL_DONE && ended != NULL)
            *ended += srv_stmt_changes(st);
        srv_stmt_done(st);
        rc = s < 0 ? s : 0;
    }
    return rc;
}

/* Pending tasks of devices unseen for the stale time and holding no lease: they end. */
static int
expire_stale_devices(struct srv_db *db, int64_t now, struct srv_fleet_expired *out,
                     struct gd_err *err)
{
    int64_t stale = srv_db_fleet_stale_seconds(db);
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_STALE_DEVICES, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, now - stale);
    struct dev {
        char id[40];
        char key[512];
        int64_t seen;
    } *devs = NULL;
    size_t n = 0, cap = 0;
    int s;
    while ((s = srv_stmt_step(st, "stale devices lookup", err)) == SRV_SQL_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            struct dev *d = realloc(devs, cap * sizeof *devs);
            if (d == NULL) {
                s = gd_err_set(err, GD_ENOMEM, "out of memory");
                break;
            }
            devs = d;
        }
        snprintf(devs[n].id, sizeof devs[n].id, "%s", srv_stmt_text(st, 0));
        snprintf(devs[n].key, sizeof devs[n].key, "%s", srv_stmt_text(st, 1));
        devs[n].seen = srv_stmt_int64(st, 2);
        n++;
    }
    srv_stmt_done(st);
    rc = s == SRV_SQL_DONE ? 0 : s;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char why[700];
        snprintf(why, sizeof why,
                 "device %s was not seen for %lld s (device-stale-seconds %lld): it left the "
                 "job's targets",
                 devs[i].key, (long long)(now - devs[i].seen), (long long)stale);
        rc = srv__fleet_device_tasks_end(db, devs[i].id, now, why, &out->stale, err);
    }
    free(devs);
    return rc;
}

/* Expiry inside the caller's write transaction. */
static int
expire(struct srv_db *db, int64_t now, struct srv_fleet_expired *out, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_EXPIRED, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, now);
    struct expired_row *rows = NULL;
    size_t n = 0;
    rc = leased_rows(st, now, &rows, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char why[700];
        snprintf(why, sizeof why, "lease expired: no heartbeat from %s for %lld s", rows[i].key,
                 (long long)(now - rows[i].beat_at));
        rc = lease_lost(db, &rows[i], now, why, out, err);
    }
    free(rows);
    if (rc == 0)
        rc = expire_stale_devices(db, now, out, err);
    for (int q = 0; q < 2 && rc == 0; q++) {
        rc = srv_db_prepare(db, q == 0 ? SQL_NEVER_ANSWERED : SQL_DEADLINE_FAIL, &st, err);
        if (rc != 0)
            break;
        srv_stmt_bind_int64(st, 1, now);
        int s = srv_stmt_step(st, "deadline update", err);
        if (s == SRV_SQL_DONE)
            *(q == 0 ? &out->never_answered : &out->late) += srv_stmt_changes(st);
        srv_stmt_done(st);
        rc = s < 0 ? s : 0;
    }
    return rc;
}

int
srv_db_fleet_stale(struct srv_db *db, const char *job_id, int64_t now, int *stale,
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_STALE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, now);
    srv_stmt_bind_text(st, 2, job_id);
    srv_stmt_bind_int64(st, 3, now - srv_db_fleet_stale_seconds(db));
    int s = srv_stmt_step(st, "stale tasks lookup", err);
    *stale = s == SRV_SQL_ROW && srv_stmt_int64(st, 0) > 0;
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}

int
srv_db_fleet_expire(struct srv_db *db, int64_t now, struct srv_fleet_expired *out,
                    struct gd_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = expire(db, now, out, err);
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    count_expired(out);
    return rc;
}

int
srv_db_lease_ready(struct srv_db *db, const char *agent_id, int64_t now, int *ready,
                   struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_READY, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, agent_id);
    srv_stmt_bind_int64(st, 2, now);
    int s = srv_stmt_step(st, "poll lookup", err);
    int known = 0;
    if (s == SRV_SQL_ROW) {
        known = srv_stmt_int64(st, 0) > 0;
        *ready = srv_stmt_int64(st, 1) > 0 || srv_stmt_int64(st, 2) > 0;
    }
    srv_stmt_done(st);
    if (s < 0)
        return s;
    return known ? 0 : gd_err_set(err, SRV_ENOTFOUND, "no agent %s: register first", agent_id);
}

/*
 * The lease document of the task just taken (the row of SQL_NEXT_TASK): an offer, live until
 * `until` (now + the confirm time), which the agent's first heartbeat confirms.
 */
static json_t *
lease_doc(struct srv_stmt *st, const char *lease_id, int64_t until, int64_t confirm,
          int64_t attempt)
{
    char t[32];
    srv_time_format(until, t);
    json_t *files = json_loads(srv_stmt_text(st, 5), 0, NULL);
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:s,s:I,s:I}", "lease_id", lease_id, "job_id",
                     srv_stmt_text(st, 1), "device_key", srv_stmt_text(st, 2), "model",
                     srv_stmt_text(st, 4), "files", files != NULL ? files : json_array(), "knobs",
                     srv__fleet_json(srv_stmt_text(st, 6)), "lease_seconds",
                     (json_int_t)srv_stmt_int64(st, 7), "lease_until", t, "confirm_seconds",
                     (json_int_t)confirm, "attempt", (json_int_t)attempt);
}

int
srv_db_lease_take(struct srv_db *db, const char *agent_id, int64_t now, json_t **lease,
                  struct srv_fleet_expired *expired, struct gd_err *err)
{
    struct srv_stmt *st;
    *lease = NULL;
    memset(expired, 0, sizeof *expired);
    json_t *doc = NULL;
    int64_t task = 0;
    char lease_id[40];
    int rc = gd_uuid_v4(lease_id, err);
    if (rc == 0)
        rc = srv_db_begin(db, err);
    /* the poll is a heartbeat of the agent's devices first: then they are not stale below */
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_AGENT_SEEN, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, agent_id);
        srv_stmt_bind_int64(st, 2, now);
        int s = srv_stmt_step(st, "agent update", err);
        int known = s == SRV_SQL_DONE && srv_stmt_changes(st) > 0;
        srv_stmt_done(st);
        rc = s < 0 ? s : known ? 0 : gd_err_set(err, SRV_ENOTFOUND, "no agent %s: register first",
                                                agent_id);
    }
    if (rc == 0)
        rc = exec2(db, SQL_DEVICES_SEEN, 0, agent_id, now, "devices update", err);
    if (rc == 0)
        rc = expire(db, now, expired, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_NEXT_TASK, &st, err);
    if (rc == 0) {
        srv_stmt_bind_text(st, 1, agent_id);
        srv_stmt_bind_int64(st, 2, now);
        int s = srv_stmt_step(st, "pending tasks lookup", err);
        if (s == SRV_SQL_ROW) {
            task = srv_stmt_int64(st, 0);
            int64_t confirm = srv_db_fleet_confirm_seconds(db);
            doc = lease_doc(st, lease_id, now + confirm, confirm, srv_stmt_int64(st, 3) + 1);
            if (doc == NULL)
                s = gd_err_set(err, GD_ENOMEM, "out of memory");
        }
        srv_stmt_done(st);
        rc = s < 0 ? s : 0;
    }
    if (rc == 0 && doc != NULL) {
        rc = srv_db_prepare(db, SQL_TASK_LEASE, &st, err);
        if (rc == 0) {
            srv_stmt_bind_int64(st, 1, task);
            srv_stmt_bind_text(st, 2, lease_id);
            srv_stmt_bind_int64(st, 3, now + srv_db_fleet_confirm_seconds(db));
            srv_stmt_bind_int64(st, 4, now);
            int s = srv_stmt_step(st, "task update", err);
            int taken = s == SRV_SQL_DONE && srv_stmt_changes(st) == 1;
            srv_stmt_done(st);
            rc = s < 0 ? s : taken ? 0 : gd_err_set(err, SRV_EBUSY, "the task was taken meanwhile");
        }
        if (rc == 0)
            rc = srv_db_prepare(db, SQL_LEASE_ADD, &st, err);
        if (rc == 0) {
            srv_stmt_bind_text(st, 1, lease_id);
            srv_stmt_bind_int64(st, 2, task);
            srv_stmt_bind_int64(st, 3, json_integer_value(json_object_get(doc, "attempt")));
            srv_stmt_bind_int64(st, 4, now);
            rc = srv_stmt_exec(st, "lease insert", err);
        }
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    if (rc != 0) {
        json_decref(doc);
        memset(expired, 0, sizeof *expired);
        return rc;
    }
    count_expired(expired);
    *lease = doc;
    return 0;
}

struct live {
    int64_t task, lease_seconds;
    int confirmed;
    char device[40];
};

/* Why a lease that is not live is not, from its outcome. */
static const char *
outcome_why(const char *outcome)
{
    static const struct {
        const char *outcome, *why;
    } whys[] = {
        {"expired", "expired (no heartbeat in time)"},
        {"withdrawn", "was withdrawn (no heartbeat confirmed it in time)"},
        {"released", "was given back by its agent"},
        {"removed", "ended when its device was removed"},
    };
    for (size_t i = 0; i < sizeof whys / sizeof whys[0]; i++)
        if (strcmp(outcome, whys[i].outcome) == 0)
            return whys[i].why;
    return outcome[0] != '\0' ? "ended already" : "ended";
}

/* Expires what is due, then finds lease_id's task: SRV_ELEASE when the lease is not live. */
static int
live_lease(struct srv_db *db, const char *lease_id, int64_t now, struct live *out,
           struct srv_fleet_expired *expired, struct gd_err *err)
{
    int rc = expire(db, now, expired, err);
    struct srv_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_LIVE, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, lease_id);
    int s = srv_stmt_step(st, "lease lookup", err);
    if (s == SRV_SQL_ROW) {
        out->task = srv_stmt_int64(st, 0);
        out->lease_seconds = srv_stmt_int64(st, 1);
        snprintf(out->device, sizeof out->device, "%s", srv_stmt_text(st, 2));
        out->confirmed = !srv_stmt_null(st, 4);
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_DONE)
        return s < 0 ? s : 0;
    rc = srv_db_prepare(db, SQL_LEASE_OUTCOME, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, lease_id);
    s = srv_stmt_step(st, "lease lookup", err);
    char outcome[16] = "";
    if (s == SRV_SQL_ROW)
        snprintf(outcome, sizeof outcome, "%s", srv_stmt_text(st, 0));
    srv_stmt_done(st);
    if (s < 0)
        return s;
    if (s == SRV_SQL_DONE)
        return gd_err_set(err, SRV_ELEASE, "no lease %s on this daemon's database", lease_id);
    return gd_err_set(err, SRV_ELEASE, "lease %s is not live: it %s", lease_id,
                      outcome_why(outcome));
}

int
srv_db_lease_heartbeat(struct srv_db *db, const char *lease_id, int64_t now, int64_t *until,
                       int *confirmed, struct gd_err *err)
{
    struct live l;
    struct srv_fleet_expired ex = {0};
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = live_lease(db, lease_id, now, &l, &ex, err);
    struct srv_stmt *st;
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_BEAT_TASK, &st, err);
    if (rc == 0) {
        srv_stmt_bind_int64(st, 1, l.task);
        srv_stmt_bind_int64(st, 2, now + l.lease_seconds);
        srv_stmt_bind_int64(st, 3, now);
        rc = srv_stmt_exec(st, "task update", err);
    }
    if (rc == 0)
        rc = exec2(db, SQL_BEAT_LEASE, 0, lease_id, now, "lease update", err);
    if (rc == 0)
        rc = exec2(db, SQL_BEAT_DEVICE, 0, l.device, now, "device update", err);
    /* an expiry found on the way is kept even when this lease is lost */
    if (rc == 0 || rc == SRV_ELEASE) {
        struct gd_err e2;
        int c = srv_db_commit(db, &e2);
        if (c != 0) {
            *err = e2;
            rc = c;
        } else {
            count_expired(&ex);
        }
    }
    srv_db_rollback(db);
    if (rc == 0) {
        *until = now + l.lease_seconds;
        if (confirmed != NULL)
            *confirmed = !l.confirmed;
    }
    return rc;
}

/* done, fail and release: the end of a live lease (release: error and run_id NULL). */
static int
lease_finish(struct srv_db *db, const char *lease_id, const char *run_id, const char *error,
             int64_t exit_code, int64_t now, struct gd_err *err)
{
    struct live l;
    struct srv_fleet_expired ex = {0};
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = live_lease(db, lease_id, now, &l, &ex, err);
    if (rc == 0 && run_id != NULL) {
        rc = srv_db_prepare(db, SQL_RUN_STATE, &st, err);
        if (rc == 0) {
            srv_stmt_bind_text(st, 1, run_id);
            int s = srv_stmt_step(st, "run lookup", err);
            int complete = s == SRV_SQL_ROW && strcmp(srv_stmt_text(st, 0), "complete") == 0;
            srv_stmt_done(st);
            if (s < 0)
                rc = s;
            else if (s == SRV_SQL_DONE)
                rc = gd_err_set(err, SRV_EBADREQ,
                                "no run %s on the daemon: upload it (POST /api/v1/runs ... "
                                "finish) first",
                                run_id);
            else if (!complete)
                rc = gd_err_set(err, SRV_EBADREQ, "run %s is still uploading: finish it first",
                                run_id);
        }
    }
    if (rc == 0 && run_id != NULL) {
        rc = srv_db_prepare(db, SQL_TASK_FINISH, &st, err);
        if (rc == 0) {
            srv_stmt_bind_int64(st, 1, l.task);
            srv_stmt_bind_int64(st, 2, now);
            srv_stmt_bind_text(st, 3, run_id);
            rc = srv_stmt_exec(st, "task update", err);
        }
    } else if (rc == 0 && error != NULL) {
        rc = task_fail(db, l.task, now, error, 1, exit_code, err);
    } else if (rc == 0) {
        rc = exec2(db, SQL_TASK_GIVE_BACK, l.task, NULL, now, "task update", err);
    }
    if (rc == 0)
        rc = lease_end(db, lease_id, now,
                       run_id != NULL  ? "finished"
                       : error != NULL ? "failed"
                                       : "released",
                       err);
    /* a report is a sign of life of the device, like a heartbeat */
    if (rc == 0)
        rc = exec2(db, SQL_BEAT_DEVICE, 0, l.device, now, "device update", err);
    if (rc == 0 || rc == SRV_ELEASE) {
        struct gd_err e2;
        int c = srv_db_commit(db, &e2);
        if (c != 0) {
            *err = e2;
            rc = c;
        } else {
            count_expired(&ex);
        }
    }
    srv_db_rollback(db);
    return rc;
}

int
srv_db_lease_done(struct srv_db *db, const char *lease_id, const char *run_id, int64_t now,
                  struct gd_err *err)
{
    return lease_finish(db, lease_id, run_id, NULL, 0, now, err);
}

int
srv_db_lease_release(struct srv_db *db, const char *lease_id, int64_t now, struct gd_err *err)
{
    return lease_finish(db, lease_id, NULL, NULL, 0, now, err);
}

int
srv_db_lease_fail(struct srv_db *db, const char *lease_id, const char *error, int64_t exit_code,
                  int64_t now, struct gd_err *err)
{
    return lease_finish(db, lease_id, NULL, error, exit_code, now, err);
}

int
srv_db_fleet_counts(struct srv_db *db, int64_t now, int64_t *devices_seen, int64_t tasks[5],
                    struct gd_err *err)
{
    static const char *const states[5] = {"pending", "leased", "finished", "failed",
                                          "never_answered"};
    struct srv_stmt *st;
    memset(tasks, 0, 5 * sizeof *tasks);
    int rc = srv_db_prepare(db, SQL_DEVICES_COUNT, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, now - srv_db_fleet_stale_seconds(db));
    int s = srv_stmt_step(st, "devices count", err);
    *devices_seen = s == SRV_SQL_ROW ? srv_stmt_int64(st, 0) : 0;
    srv_stmt_done(st);
    if (s < 0)
        return s;
    rc = srv_db_prepare(db, SQL_TASKS_COUNT, &st, err);
    if (rc != 0)
        return rc;
    while ((s = srv_stmt_step(st, "tasks count", err)) == SRV_SQL_ROW)
        for (int k = 0; k < 5; k++)
            if (strcmp(srv_stmt_text(st, 0), states[k]) == 0)
                tasks[k] = srv_stmt_int64(st, 1);
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}
