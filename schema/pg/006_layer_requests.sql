-- 006_layer_requests.sql (PostgreSQL): SQLite's 006 (schema/sql/006_layer_requests.sql says
-- what each column is): tensors the daemon asks agents for, where a run holds fingerprints.

CREATE TABLE layer_requests (
    run_id        text COLLATE "C" NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx           bigint NOT NULL,
    reason        text COLLATE "C" NOT NULL,
    other_run     text COLLATE "C" NOT NULL DEFAULT '',
    requested_at  bigint NOT NULL,
    fulfilled_at  bigint,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX layer_requests_open ON layer_requests(run_id) WHERE fulfilled_at IS NULL;
