-- 013_diff_views.sql: what the dashboard reads of a cached diff (docs/SERVER.md, "Diff
-- views"): its summary document and one row per layer, made from the diff's cached
-- JSON the first time a view asks for them (server/diff_view.c), so that a view of a
-- 10,000-layer diff reads pages of rows instead of the whole diff. Deleting a diff deletes
-- its view.

CREATE TABLE diff_views (
    diff_id     INTEGER PRIMARY KEY REFERENCES diffs(id) ON DELETE CASCADE,
    format      INTEGER NOT NULL,                -- SRV_DIFF_VIEW_FORMAT; another is made again
    n_layers    INTEGER NOT NULL,
    summary     TEXT NOT NULL,                   -- the summary document, compact JSON
    created_at  INTEGER NOT NULL
);

CREATE TABLE diff_view_layers (
    diff_id  INTEGER NOT NULL REFERENCES diff_views(diff_id) ON DELETE CASCADE,
    idx      INTEGER NOT NULL,                   -- position in the diff
    name     TEXT NOT NULL,
    op       TEXT NOT NULL,                      -- '' when not recorded
    verdict  TEXT NOT NULL,
    err      REAL,                               -- NULL when not finite or not compared
    row      TEXT NOT NULL,                      -- the layer's row, compact JSON
    PRIMARY KEY (diff_id, idx)
) WITHOUT ROWID;
