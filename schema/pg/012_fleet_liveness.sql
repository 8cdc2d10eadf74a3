-- 012_fleet_liveness.sql (PostgreSQL): SQLite's 012 (schema/sql/012_fleet_liveness.sql says
-- what each column is): serve identities, removed devices, lease offers and their ends.
ALTER TABLE fleet_agents ADD COLUMN serve_id text COLLATE "C";
ALTER TABLE fleet_devices ADD COLUMN removed_at bigint;
ALTER TABLE fleet_leases ADD COLUMN confirmed_at bigint;
UPDATE fleet_leases SET confirmed_at = taken_at;
ALTER TABLE fleet_leases DROP CONSTRAINT fleet_leases_outcome_check;
ALTER TABLE fleet_leases ADD CONSTRAINT fleet_leases_outcome_check
    CHECK (outcome IN ('finished', 'failed', 'expired', 'released', 'withdrawn', 'removed'));
