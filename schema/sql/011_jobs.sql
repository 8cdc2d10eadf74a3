-- 011_jobs.sql: jobs that agents run as a service (issue 15 item 1; docs/SERVER.md, "Jobs,
-- devices and leases"; the contract is the jobs API of schema/openapi.yaml). "Job" in the
-- tables of 003 means a compare job; these tables and their C code say fleet_ instead.
--
-- A file a job names (model, input, data) is a blob like a layer's (content-addressed,
-- compressed; migration 001's blobs table), recorded here so retention keeps it.
CREATE TABLE fleet_files (
    sha256      TEXT PRIMARY KEY REFERENCES blobs(sha256),
    bytes       INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);

-- One registration of `gpudiff-agent serve` (a restarted serve registers anew and takes its
-- devices over).
CREATE TABLE fleet_agents (
    id             TEXT PRIMARY KEY,              -- UUID v4
    host           TEXT NOT NULL,
    agent_version  TEXT NOT NULL,
    registered_at  INTEGER NOT NULL,
    last_seen      INTEGER NOT NULL
);

-- A device by its key, stable across restarts of serve; agent_id is its newest registration.
CREATE TABLE fleet_devices (
    id             TEXT PRIMARY KEY,              -- UUID v4
    key            TEXT NOT NULL UNIQUE,
    agent_id       TEXT NOT NULL REFERENCES fleet_agents(id),
    host           TEXT NOT NULL,
    backend        TEXT NOT NULL,
    env            TEXT NOT NULL,                 -- JSON object: run.json's env
    labels         TEXT NOT NULL,                 -- JSON object of strings
    registered_at  INTEGER NOT NULL,
    last_seen      INTEGER NOT NULL
);
CREATE INDEX fleet_devices_agent ON fleet_devices(agent_id);

CREATE TABLE fleet_jobs (
    id             TEXT PRIMARY KEY,              -- UUID v4
    created_at     INTEGER NOT NULL,
    model          TEXT NOT NULL,
    files          TEXT NOT NULL,                 -- JSON array as submitted
    knobs          TEXT NOT NULL,                 -- JSON object
    match_json     TEXT NOT NULL,                 -- JSON object
    lease_seconds  INTEGER NOT NULL,
    attempts       INTEGER NOT NULL,
    deadline       INTEGER NOT NULL,              -- unix seconds
    token_id       INTEGER                        -- who submitted it
);
CREATE INDEX fleet_jobs_created ON fleet_jobs(created_at);

-- One per job and target device; id orders them as submitted (oldest job first).
CREATE TABLE fleet_tasks (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id         TEXT NOT NULL REFERENCES fleet_jobs(id),
    device_id      TEXT NOT NULL REFERENCES fleet_devices(id),
    state          TEXT NOT NULL CHECK (state IN ('pending', 'leased', 'finished', 'failed',
                                                  'never_answered')),
    attempts_used  INTEGER NOT NULL DEFAULT 0,
    lease_id       TEXT,                          -- the live lease while leased
    lease_until    INTEGER,                       -- unix seconds, while leased
    run_id         TEXT,                          -- finished: the run it made
    error          TEXT,                          -- failed: why
    exit_code      INTEGER,                       -- failed by the agent: its exit status
    updated_at     INTEGER NOT NULL,
    UNIQUE (job_id, device_id)
);
CREATE INDEX fleet_tasks_open ON fleet_tasks(state) WHERE state IN ('pending', 'leased');
CREATE INDEX fleet_tasks_device ON fleet_tasks(device_id, state);

-- Every lease handed out; ended_at and outcome once it is done, failed or expired.
CREATE TABLE fleet_leases (
    id             TEXT PRIMARY KEY,              -- UUID v4
    task_id        INTEGER NOT NULL REFERENCES fleet_tasks(id),
    attempt        INTEGER NOT NULL,
    taken_at       INTEGER NOT NULL,
    beat_at        INTEGER NOT NULL,              -- the take or the last heartbeat
    ended_at       INTEGER,
    outcome        TEXT CHECK (outcome IN ('finished', 'failed', 'expired'))
);
CREATE INDEX fleet_leases_task ON fleet_leases(task_id);
