-- 024_diff_cache_index.sql: the diff cache's order of eviction holds each entry's size, so
-- that the size of the whole cache (summed at every insertion, db_diffs.c's evict()) and the
-- oldest entries are read from the index alone. Before, both read each row of diffs, whose
-- JSON text of some 10 KB sits before `bytes` in the row: summing the sizes walked every
-- cached diff's overflow pages, once per diff stored (a 50-device matrix's 2,450 diffs spent a
-- third of their CPU there: docs/PERFORMANCE.md, "The matrix of 50 devices").
DROP INDEX diffs_by_use;
CREATE INDEX diffs_by_use ON diffs(tol_default, last_used, id, bytes);
