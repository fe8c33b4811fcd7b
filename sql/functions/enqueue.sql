-- Retired: workhorse.enqueue(jsonb, boolean), the jsonb batch decision of migrations 001-005, was
-- replaced by workhorse.enqueue_batch in migration 006. Kept as a drop so an installation made
-- before 006 loses it when it upgrades (the migrations no longer hold function statements).
drop function if exists workhorse.enqueue(jsonb, boolean);
