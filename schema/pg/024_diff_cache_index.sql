-- 024_diff_cache_index.sql (PostgreSQL): SQLite's 024 (schema/sql/024_diff_cache_index.sql
-- says why): the order of eviction holds each entry's size, for index-only reads.
DROP INDEX diffs_by_use;
CREATE INDEX diffs_by_use ON diffs(tol_default, last_used, id, bytes);
