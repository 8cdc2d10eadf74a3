-- 012_fleet_liveness.sql: devices told apart, leases only to live agents (issue 24;
-- docs/SERVER.md, "Jobs, devices and leases").
--
-- serve_id: the identity a `gpudiff-agent serve` keeps across its restarts (a file in its
-- cache folder): a device key registered again by the same serve_id is a restart, by
-- another one while the device is live a collision (409).
ALTER TABLE fleet_agents ADD COLUMN serve_id TEXT;
-- removed_at: DELETE /api/v1/devices/{id}; the row stays for the job documents that name it.
ALTER TABLE fleet_devices ADD COLUMN removed_at INTEGER;

-- A lease is an offer until the agent's first heartbeat confirms it (confirmed_at); an
-- offer not confirmed within lease-confirm-seconds is withdrawn, an agent may give a lease
-- back (released), and an admin's removal of the device ends it (removed). SQLite cannot
-- change a CHECK constraint in place: the table is made again, its rows copied (leases
-- made before this migration count as confirmed when taken).
CREATE TABLE fleet_leases_012 (
    id             TEXT PRIMARY KEY,              -- UUID v4
    task_id        INTEGER NOT NULL REFERENCES fleet_tasks(id),
    attempt        INTEGER NOT NULL,
    taken_at       INTEGER NOT NULL,
    beat_at        INTEGER NOT NULL,              -- the take or the last heartbeat
    ended_at       INTEGER,
    outcome        TEXT CHECK (outcome IN ('finished', 'failed', 'expired', 'released',
                                           'withdrawn', 'removed')),
    confirmed_at   INTEGER                        -- the first heartbeat; NULL: an offer
);
INSERT INTO fleet_leases_012(id, task_id, attempt, taken_at, beat_at, ended_at, outcome,
                             confirmed_at)
    SELECT id, task_id, attempt, taken_at, beat_at, ended_at, outcome, taken_at FROM fleet_leases;
DROP TABLE fleet_leases;
ALTER TABLE fleet_leases_012 RENAME TO fleet_leases;
CREATE INDEX fleet_leases_task ON fleet_leases(task_id);
