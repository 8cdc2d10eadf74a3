-- 004_sweeps.sql: sweeps, from `gpudiff-agent sweep --server` (docs/SERVER.md, "Sweeps"):
-- one row per sweep document, kept as it came (canonical JSON) with the few fields it is
-- listed and served by, and one row per run the document names, so a sweep's runs and a
-- run's sweeps are each one indexed query.

CREATE TABLE sweeps (
    id              TEXT PRIMARY KEY,             -- the agent's UUID v4
    model           TEXT NOT NULL,                -- model.name
    backend         TEXT NOT NULL,
    gpu             TEXT NOT NULL DEFAULT '',     -- env.gpu_name; '' on CPU backends
    created_at      TEXT NOT NULL,                -- as sent
    created_ts      INTEGER NOT NULL,             -- the same in unix seconds
    received_at     INTEGER NOT NULL,
    n_settings      INTEGER NOT NULL,
    content_sha256  TEXT NOT NULL,                -- of the canonical document: idempotency
    doc             TEXT NOT NULL,                -- the document, canonical JSON
    summary         TEXT NOT NULL,                -- what GET /api/v1/sweeps lists, JSON
    table_rows      TEXT NOT NULL                 -- one checked row per setting, JSON
);
CREATE INDEX sweeps_by_time ON sweeps(created_ts DESC, id DESC);
CREATE INDEX sweeps_by_model ON sweeps(model, created_ts DESC, id DESC);

-- A run goes with its links: deleting it (retention of an unfinished upload, never of a
-- complete run) drops the link, not the sweep.
CREATE TABLE sweep_runs (
    sweep_id  TEXT NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    role      TEXT NOT NULL CHECK (role IN ('float64', 'setting')),
    setting   TEXT NOT NULL DEFAULT '',           -- the setting's name; '' for float64
    position  INTEGER NOT NULL,                   -- in the document: float64, then settings
    PRIMARY KEY (sweep_id, run_id)
) WITHOUT ROWID;
CREATE INDEX sweep_runs_by_run ON sweep_runs(run_id);
