-- 021_diff_cache_cap.sql (PostgreSQL): SQLite's 021 (schema/sql/021_diff_cache_cap.sql says
-- what each column is): the diff cache's size and order of eviction.
ALTER TABLE diffs ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE diffs ADD COLUMN last_used bigint NOT NULL DEFAULT 0;
ALTER TABLE diffs ADD COLUMN tol_default bigint NOT NULL DEFAULT 1;
UPDATE diffs SET
    bytes = octet_length(json) + 128 + coalesce((SELECT sum(length(name) + length(verdict) + 48)
        FROM diff_layers WHERE diff_id = diffs.id), 0),
    last_used = created_at,
    tol_default = CASE WHEN atol = 1e-8 AND rtol = 1e-5 THEN 1 ELSE 0 END;
CREATE INDEX diffs_by_use ON diffs(tol_default, last_used, id);
