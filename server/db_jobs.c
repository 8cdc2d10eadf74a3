/*
 * db_jobs.c: compare_jobs (migration 003), the durable queue of comparisons with a model's
 * baseline. Jobs are added inside the transactions of srv_db_run_finish() and
 * srv_db_baseline_set(), and taken in order by the compare worker (compare.c).
 */
#include <stdio.h>
#include <string.h>

#include "db.h"

static const char SQL_JOB_RUN[] =
    "INSERT INTO compare_jobs(run, baseline, queued_at) "
    "SELECT r.id, b.run_id, ?2 FROM runs r JOIN baselines b ON b.model_id = r.model_id "
    "WHERE r.id = ?1 AND b.run_id <> r.id ON CONFLICT DO NOTHING";
static const char SQL_JOB_MODEL[] =
    "INSERT INTO compare_jobs(run, baseline, queued_at) "
    "SELECT id, ?2, ?3 FROM runs WHERE model_id = ?1 AND state = 'complete' AND id <> ?2 "
    "ORDER BY created_ts DESC, id DESC LIMIT ?4 ON CONFLICT DO NOTHING";
/* A job whose baseline is no longer its model's is dropped: nothing reads that diff. */
static const char SQL_JOB_STALE[] = "DELETE FROM compare_jobs WHERE baseline = ?1 AND run IN "
                                    "(SELECT id FROM runs WHERE model_id = ?2)";
static const char SQL_JOB_NEXT[] =
    "SELECT j.id, j.run, j.baseline, b.run_id IS NOT NULL FROM compare_jobs j "
    "JOIN runs r ON r.id = j.run LEFT JOIN baselines b ON b.model_id = r.model_id "
    "AND b.run_id = j.baseline WHERE j.id > ?1 ORDER BY j.id LIMIT 1";
static const char SQL_JOB_DONE[] = "DELETE FROM compare_jobs WHERE id = ?1";
static const char SQL_JOB_COUNT[] = "SELECT count(*) FROM compare_jobs";

static int
step_done(struct srv_db *db, sqlite3_stmt *st, const char *what, struct gd_err *err)
{
    int s = sqlite3_step(st);
    srv_db_done(st);
    return s == SQLITE_DONE ? 0 : srv_db_fail(db, s, what, err);
}

int
srv_db_job_queue_run(struct srv_db *db, const char *run_id, int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_RUN, &st, err);
    if (rc != 0)
        return rc;
    srv_db_bind_text(st, 1, run_id);
    sqlite3_bind_int64(st, 2, now);
    return step_done(db, st, "compare job", err);
}

int
srv_db_job_queue_model(struct srv_db *db, int64_t model_id, const char *old_baseline,
                       const char *baseline, int64_t limit, int64_t now, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (old_baseline != NULL && old_baseline[0] != '\0' && strcmp(old_baseline, baseline) != 0) {
        rc = srv_db_prepare(db, SQL_JOB_STALE, &st, err);
        if (rc != 0)
            return rc;
        srv_db_bind_text(st, 1, old_baseline);
        sqlite3_bind_int64(st, 2, model_id);
        rc = step_done(db, st, "stale compare jobs", err);
        if (rc != 0)
            return rc;
    }
    rc = srv_db_prepare(db, SQL_JOB_MODEL, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, model_id);
    srv_db_bind_text(st, 2, baseline);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, limit);
    return step_done(db, st, "compare jobs", err);
}

int
srv_db_job_next(struct srv_db *db, int64_t after, struct srv_job *job, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_NEXT, &st, err);
    if (rc != 0)
        return rc;
    sqlite3_bind_int64(st, 1, after);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        job->id = sqlite3_column_int64(st, 0);
        snprintf(job->run, sizeof job->run, "%s", (const char *)sqlite3_column_text(st, 1));
        snprintf(job->baseline, sizeof job->baseline, "%s",
                 (const char *)sqlite3_column_text(st, 2));
        job->current = sqlite3_column_int(st, 3);
    }
    srv_db_done(st);
    if (s == SQLITE_DONE)
        return gd_err_set(err, SRV_ENOTFOUND, "no compare job");
    return s == SQLITE_ROW ? 0 : srv_db_fail(db, s, "compare job", err);
}

int
srv_db_job_done(struct srv_db *db, int64_t id, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = srv_db_prepare(db, SQL_JOB_DONE, &st, err);
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, id);
        rc = step_done(db, st, "compare job done", err);
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}

int
srv_db_jobs_count(struct srv_db *db, int64_t *n, struct gd_err *err)
{
    sqlite3_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_COUNT, &st, err);
    if (rc != 0)
        return rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    srv_db_done(st);
    return s == SQLITE_ROW ? 0 : srv_db_fail(db, s, "compare jobs", err);
}
