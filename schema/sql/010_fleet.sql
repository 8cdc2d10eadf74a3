-- 010_fleet.sql: the claim of a compare job (migration 003's durable queue) by one daemon's
-- worker, so several daemons on one database never compute one job at once
-- (docs/SERVER.md, "When diffs are computed"): a worker sets claimed_until to when its claim
-- lapses (a daemon killed mid-job leaves it to lapse, then another worker takes the job).

ALTER TABLE compare_jobs ADD COLUMN claimed_until INTEGER;  -- unix seconds; NULL: free
