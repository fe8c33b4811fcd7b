-- Retired: workhorse.full_field_digests(bytea, jsonb) used the field digests a client sent as they
-- were. PostgreSQL now computes them from the values it receives (request_field_digests.sql). Kept
-- as a drop so an installation that had it loses it when it upgrades.
drop function if exists workhorse.full_field_digests(bytea, jsonb);
