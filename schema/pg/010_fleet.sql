-- 010_fleet.sql (PostgreSQL): SQLite's 010 (schema/sql/010_fleet.sql says what the column
-- is): the compare jobs' claims, so several daemons on one database never compute one job
-- at once.

ALTER TABLE compare_jobs ADD COLUMN claimed_until bigint;
