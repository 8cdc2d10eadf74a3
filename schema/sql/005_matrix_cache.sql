-- 005_matrix_cache.sql: the device matrix of each model as served (docs/SERVER.md, "The
-- matrix cache"): a second load of a matrix is one row read, not one lookup per cell.
-- signature is the SHA-256 of what the answer was made from: the engine version and the
-- devices with their newest runs; a new run of any device, a run dropped by retention or a
-- newer engine changes it, and the row is made again on the next complete load.

CREATE TABLE matrix_cache (
    model_id    INTEGER PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
    signature   TEXT NOT NULL,
    n_devices   INTEGER NOT NULL,
    json        TEXT NOT NULL,                   -- the answer of GET .../matrix, compact
    seconds     REAL NOT NULL,                   -- how long making it took
    created_at  INTEGER NOT NULL
);
