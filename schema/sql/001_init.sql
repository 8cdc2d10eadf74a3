-- 001_init.sql: gpudiffd's first schema: models, runs, their layers, the content-addressed
-- tensor blobs, cached diffs, baselines and tokens (docs/SERVER.md, "Storage").
-- Times are unix seconds of the server's clock unless a column says otherwise.

CREATE TABLE models (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,            -- the agent's UUID v4
    model_id        INTEGER NOT NULL REFERENCES models(id),
    model_sha256    TEXT NOT NULL,
    backend         TEXT NOT NULL,
    gpu             TEXT NOT NULL DEFAULT '',    -- env.gpu_name; '' on CPU backends
    host            TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,               -- run.json's created_at as sent
    created_ts      INTEGER NOT NULL,            -- the same in unix seconds
    state           TEXT NOT NULL CHECK (state IN ('uploading', 'complete')),
    received_at     INTEGER NOT NULL,
    finished_at     INTEGER,
    n_layers        INTEGER NOT NULL,
    content_sha256  TEXT NOT NULL,               -- of run.json in canonical form: idempotency
    meta            TEXT NOT NULL,               -- run.json without "layers", canonical JSON
    trimmed_at      INTEGER                      -- when retention dropped the tensors
);
-- Listing newest first, filtered by nothing, model, gpu or backend: each an index walk.
CREATE INDEX runs_by_time ON runs(state, created_ts DESC, id DESC);
CREATE INDEX runs_by_model ON runs(model_id, state, created_ts DESC, id DESC);
CREATE INDEX runs_by_gpu ON runs(gpu, state, created_ts DESC, id DESC);
CREATE INDEX runs_by_backend ON runs(backend, state, created_ts DESC, id DESC);
CREATE INDEX runs_by_received ON runs(received_at);

-- Tensor data, once per distinct content: shuffled by element size, then zstd
-- (server/blob.h). AUTOINCREMENT: a rowid is never reused, so a download that reads a blob
-- in pieces by rowid can never switch to another blob's bytes.
CREATE TABLE blobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    sha256       TEXT NOT NULL UNIQUE,           -- of the raw data (C order, little-endian)
    dtype        TEXT NOT NULL,                  -- of the upload that stored it
    elem_size    INTEGER NOT NULL CHECK (elem_size BETWEEN 1 AND 8),
    raw_size     INTEGER NOT NULL,
    stored_size  INTEGER NOT NULL,
    codec        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    data         BLOB NOT NULL
);

CREATE TABLE layers (
    run_id         TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx            INTEGER NOT NULL,
    name           TEXT NOT NULL,
    op             TEXT NOT NULL DEFAULT '',
    dtype          TEXT NOT NULL,
    shape          TEXT NOT NULL,                -- JSON array
    sha256         TEXT NOT NULL,                -- of the data, from run.json
    raw_size       INTEGER NOT NULL,
    reduction_len  INTEGER,
    discontinuous  INTEGER,
    record         TEXT NOT NULL,                -- the run.json layer record, canonical JSON
    uploaded_at    INTEGER,                      -- NULL until the data is here
    blob_sha256    TEXT REFERENCES blobs(sha256),-- NULL before upload and after retention
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX layers_by_blob ON layers(blob_sha256) WHERE blob_sha256 IS NOT NULL;

-- Comparison results, cached per pair of runs, layer and tolerances.
CREATE TABLE diffs (
    run_a           TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    run_b           TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    atol            REAL NOT NULL,
    rtol            REAL NOT NULL,
    engine_version  TEXT NOT NULL,               -- a newer engine recomputes
    verdict         TEXT NOT NULL,
    metrics         TEXT NOT NULL,               -- JSON
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (run_a, run_b, idx, atol, rtol)
);
CREATE INDEX diffs_by_b ON diffs(run_b);

CREATE TABLE tokens (
    id          INTEGER PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,            -- SHA-256 of the whole token; never the token
    role        TEXT NOT NULL CHECK (role IN ('viewer', 'agent', 'admin')),
    label       TEXT NOT NULL DEFAULT '',
    hint        TEXT NOT NULL,                   -- the first characters, to tell tokens apart
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

-- The run each model's other runs are compared against.
CREATE TABLE baselines (
    model_id  INTEGER PRIMARY KEY REFERENCES models(id),
    run_id    TEXT NOT NULL REFERENCES runs(id),
    set_at    INTEGER NOT NULL,
    set_by    INTEGER REFERENCES tokens(id)
);
