-- 013_diff_views.sql (PostgreSQL): SQLite's 013 (schema/sql/013_diff_views.sql says what
-- each column is): a cached diff's summary and slim per-layer rows for the dashboard.

CREATE TABLE diff_views (
    diff_id     bigint PRIMARY KEY REFERENCES diffs(id) ON DELETE CASCADE,
    format      bigint NOT NULL,
    n_layers    bigint NOT NULL,
    summary     text COLLATE "C" NOT NULL,
    created_at  bigint NOT NULL
);

CREATE TABLE diff_view_layers (
    diff_id  bigint NOT NULL REFERENCES diff_views(diff_id) ON DELETE CASCADE,
    idx      bigint NOT NULL,
    name     text COLLATE "C" NOT NULL,
    op       text COLLATE "C" NOT NULL,
    verdict  text COLLATE "C" NOT NULL,
    err      double precision,
    row      text COLLATE "C" NOT NULL,
    PRIMARY KEY (diff_id, idx)
);
