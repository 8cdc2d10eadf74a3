/*
 * db_compare_queue.c: compare_jobs (migration 003), the durable queue of comparisons with a model's
 * baseline. Jobs are added inside the transactions of srv_db_run_finish() and
 * srv_db_baseline_set(), and claimed in order by the compare workers (compare.c) of every
 * daemon on the database, one job per worker at a time (migration 010's claim columns).
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
/* The oldest job after ?1 that no worker holds (or whose worker's claim ran out). */
static const char SQL_JOB_CLAIM[] =
    "UPDATE compare_jobs SET claimed_until = ?3 WHERE id = (SELECT id FROM compare_jobs "
    "WHERE id > ?1 AND (claimed_until IS NULL OR claimed_until < ?2) ORDER BY id LIMIT 1) "
    "RETURNING id, run, baseline";
static const char SQL_JOB_CURRENT[] =
    "SELECT 1 FROM runs r JOIN baselines b ON b.model_id = r.model_id AND b.run_id = ?2 "
    "WHERE r.id = ?1";
static const char SQL_JOB_RELEASE[] = "UPDATE compare_jobs SET claimed_until = NULL WHERE id = ?1";
static const char SQL_JOB_DONE[] = "DELETE FROM compare_jobs WHERE id = ?1";
static const char SQL_JOB_COUNT[] = "SELECT count(*) FROM compare_jobs";

int
srv_db_job_queue_run(struct srv_db *db, const char *run_id, int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_RUN, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_text(st, 1, run_id);
    srv_stmt_bind_int64(st, 2, now);
    return srv_stmt_exec(st, "compare job", err);
}

int
srv_db_job_queue_model(struct srv_db *db, int64_t model_id, const char *old_baseline,
                       const char *baseline, int64_t limit, int64_t now, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = 0;
    if (old_baseline != NULL && old_baseline[0] != '\0' && strcmp(old_baseline, baseline) != 0) {
        rc = srv_db_prepare(db, SQL_JOB_STALE, &st, err);
        if (rc != 0)
            return rc;
        srv_stmt_bind_text(st, 1, old_baseline);
        srv_stmt_bind_int64(st, 2, model_id);
        rc = srv_stmt_exec(st, "stale compare jobs", err);
        if (rc != 0)
            return rc;
    }
    rc = srv_db_prepare(db, SQL_JOB_MODEL, &st, err);
    if (rc != 0)
        return rc;
    srv_stmt_bind_int64(st, 1, model_id);
    srv_stmt_bind_text(st, 2, baseline);
    srv_stmt_bind_int64(st, 3, now);
    srv_stmt_bind_int64(st, 4, limit);
    return srv_stmt_exec(st, "compare jobs", err);
}

int
srv_db_job_claim(struct srv_db *db, int64_t after, int64_t now, int64_t lease, struct srv_job *job,
                 struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc != 0)
        return rc;
    rc = srv_db_prepare(db, SQL_JOB_CLAIM, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_int64(st, 1, after);
    srv_stmt_bind_int64(st, 2, now);
    srv_stmt_bind_int64(st, 3, now + lease);
    int s = srv_stmt_step(st, "compare job", err);
    if (s == SRV_SQL_ROW) {
        job->id = srv_stmt_int64(st, 0);
        snprintf(job->run, sizeof job->run, "%s", srv_stmt_text(st, 1));
        snprintf(job->baseline, sizeof job->baseline, "%s", srv_stmt_text(st, 2));
    }
    srv_stmt_done(st);
    if (s != SRV_SQL_ROW) {
        rc = s == SRV_SQL_DONE ? gd_err_set(err, SRV_ENOTFOUND, "no compare job") : s;
        goto done;
    }
    rc = srv_db_prepare(db, SQL_JOB_CURRENT, &st, err);
    if (rc != 0)
        goto done;
    srv_stmt_bind_text(st, 1, job->run);
    srv_stmt_bind_text(st, 2, job->baseline);
    s = srv_stmt_step(st, "compare job", err);
    job->current = s == SRV_SQL_ROW;
    srv_stmt_done(st);
    if (s < 0) {
        rc = s;
        goto done;
    }
    rc = srv_db_commit(db, err);
done:
    srv_db_rollback(db);
    return rc;
}

/* One statement on a job, in its own transaction. */
static int
job_write(struct srv_db *db, const char *sql, int64_t id, const char *what, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_begin(db, err);
    if (rc == 0)
        rc = srv_db_prepare(db, sql, &st, err);
    if (rc == 0) {
        srv_stmt_bind_int64(st, 1, id);
        rc = srv_stmt_exec(st, what, err);
    }
    if (rc == 0)
        rc = srv_db_commit(db, err);
    srv_db_rollback(db);
    return rc;
}

int
srv_db_job_release(struct srv_db *db, int64_t id, struct gd_err *err)
{
    return job_write(db, SQL_JOB_RELEASE, id, "compare job release", err);
}

int
srv_db_job_done(struct srv_db *db, int64_t id, struct gd_err *err)
{
    return job_write(db, SQL_JOB_DONE, id, "compare job done", err);
}

int
srv_db_jobs_count(struct srv_db *db, int64_t *n, struct gd_err *err)
{
    struct srv_stmt *st;
    int rc = srv_db_prepare(db, SQL_JOB_COUNT, &st, err);
    if (rc != 0)
        return rc;
    int s = srv_stmt_step(st, "compare jobs", err);
    if (s == SRV_SQL_ROW)
        *n = srv_stmt_int64(st, 0);
    srv_stmt_done(st);
    return s < 0 ? s : 0;
}
