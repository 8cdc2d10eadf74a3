-- 020_run_owner.sql (PostgreSQL): SQLite's 020 (schema/sql/020_run_owner.sql says what the
-- column is): the token that created each run.
ALTER TABLE runs ADD COLUMN owner_token bigint;
