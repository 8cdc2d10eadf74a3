-- 020_run_owner.sql: each run belongs to the token that created it (issue 25 item 4;
-- docs/SERVER.md, "Ownership"): only that token, or an admin, may finish it, send its
-- layers (fetched layers included), post its run.json again, or attach a replay to it.
-- NULL for runs made before this migration: an admin's alone from now on. Not a foreign
-- key: a token is revoked, never deleted, and the id stays what the logs name.
ALTER TABLE runs ADD COLUMN owner_token INTEGER;
