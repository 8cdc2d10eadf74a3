-- 003_compare_jobs.sql: the comparisons of finished runs with their model's baseline, queued
-- durably (docs/SERVER.md, "When diffs are computed"). A job is written in the transaction
-- that finishes its run or sets its baseline, and deleted once its diff is cached (or can
-- never be made), so no job is lost to a full queue or a restart: the worker resumes them.
CREATE TABLE compare_jobs (
    id         INTEGER PRIMARY KEY,
    run        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    baseline   TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    queued_at  INTEGER NOT NULL,
    UNIQUE (run, baseline)
);
CREATE INDEX compare_jobs_by_baseline ON compare_jobs(baseline);
