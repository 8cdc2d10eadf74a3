-- 006_layer_requests.sql: tensors the daemon asks agents for (docs/SERVER.md, "Fingerprints
-- and fetched layers"). A run captured as fingerprints stores no tensor; when a diff shows a
-- layer differing where a difference begins (or amplifies, or turns nonfinite), the daemon
-- records a request for that layer of each run that lacks it, and `gpudiff-agent
-- fetch-layers` (or `run` right after its upload) computes the layer again and sends it. A
-- request is fulfilled in the transaction that stores the tensor, which also drops the
-- cached diffs of the run, so the next diff compares the layer in full.
CREATE TABLE layer_requests (
    run_id        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    reason        TEXT NOT NULL,                -- why: the diff's verdict and role
    other_run     TEXT NOT NULL DEFAULT '',     -- the run it was compared with; '' by hand
    requested_at  INTEGER NOT NULL,
    fulfilled_at  INTEGER,                      -- NULL until the tensor is stored
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX layer_requests_open ON layer_requests(run_id) WHERE fulfilled_at IS NULL;
