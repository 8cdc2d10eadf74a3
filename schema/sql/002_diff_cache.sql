-- 002_diff_cache.sql: the comparison service's cache (docs/SERVER.md, "Comparisons"): one
-- row per compared pair of runs holding the JSON text that GET /api/v1/diff serves as it is,
-- one small summary row per layer of it for the matrix and history, and each run's device
-- key, the column the matrix and history group runs by.

-- 001's diffs (one row per pair and layer) was never written by any gpudiffd: replaced.
DROP TABLE diffs;

CREATE TABLE diffs (
    id               INTEGER PRIMARY KEY,
    run_a            TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    run_b            TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    truth            TEXT NOT NULL DEFAULT '',    -- the truth run's id; '' for none
    atol             REAL NOT NULL,
    rtol             REAL NOT NULL,
    engine_version   TEXT NOT NULL,               -- a newer engine computes afresh
    first_divergent  TEXT,                        -- a layer name; NULL when none
    n_layers         INTEGER NOT NULL,
    json             TEXT NOT NULL,               -- gd_diff_to_json's object, compact
    seconds          REAL NOT NULL,               -- how long computing it took
    created_at       INTEGER NOT NULL,
    UNIQUE (run_a, run_b, truth, atol, rtol, engine_version)
);
CREATE INDEX diffs_by_b ON diffs(run_b);
CREATE INDEX diffs_by_truth ON diffs(truth) WHERE truth <> '';

-- Per layer of a cached diff, what the matrix and history show: no JSON to parse there.
CREATE TABLE diff_layers (
    diff_id  INTEGER NOT NULL REFERENCES diffs(id) ON DELETE CASCADE,
    idx      INTEGER NOT NULL,                    -- position in the diff (run a's order)
    name     TEXT NOT NULL,
    verdict  TEXT NOT NULL,
    err      REAL,                                -- NULL when not finite or not compared
    max_abs  REAL,
    PRIMARY KEY (diff_id, idx)
) WITHOUT ROWID;

-- truth is '' or a run id, so it cannot be a foreign key: the trigger does the cascade.
CREATE TRIGGER diffs_truth_gone AFTER DELETE ON runs
BEGIN
    DELETE FROM diffs WHERE truth = old.id;
END;

-- The device key (docs/SERVER.md, "Devices"): backend, GPU name and the knobs that change
-- numerics. gpudiff_device_key() is the daemon's own C function (server/device.c),
-- registered on every connection it opens, so existing runs get the same key new ones do.
ALTER TABLE runs ADD COLUMN device TEXT NOT NULL DEFAULT '';
UPDATE runs SET device = gpudiff_device_key(meta);
CREATE INDEX runs_by_device ON runs(model_id, device, state, created_ts DESC, id DESC);
