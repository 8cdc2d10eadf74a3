-- 021_diff_cache_cap.sql: the diff cache gets a size and an order of eviction (issue 25
-- item 3; docs/SERVER.md, "The cache"): --diff-cache-max bounds the bytes of every cached
-- diff together, and when a new one would pass it the least recently used go first, those
-- of tolerances other than the defaults before any of the defaults (which the matrix,
-- history and run list read).
ALTER TABLE diffs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;       -- its text and layer rows
ALTER TABLE diffs ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;   -- seconds, to the minute
ALTER TABLE diffs ADD COLUMN tol_default INTEGER NOT NULL DEFAULT 1; -- 1: atol 1e-8, rtol 1e-5
UPDATE diffs SET
    bytes = length(CAST(json AS BLOB)) + 128 + coalesce((SELECT sum(length(name) +
        length(verdict) + 48) FROM diff_layers WHERE diff_id = diffs.id), 0),
    last_used = created_at,
    tol_default = (atol = 1e-8 AND rtol = 1e-5);
CREATE INDEX diffs_by_use ON diffs(tol_default, last_used, id);
