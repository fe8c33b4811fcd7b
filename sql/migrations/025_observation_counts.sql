-- Identical decisions within one flush of a producer's observation log are stored as one row
-- (docs/enqueue.md, "Observations"): `count` decisions alike in scope, key digest, outcome, request
-- digests, reason, job, queue, type and source, the first at `at` and the last at `last_at`. A burst
-- of 500 replays of one key then writes one row, not 500. Rows written before this migration, and
-- by clients that do not aggregate, are single decisions: count 1, last_at null (read as `at`).
-- Readers add up `count` where they counted rows. Both columns are added without a table rewrite
-- (a constant default; the check reads the table once); on the distributed layout (Citus) enqueue_observation is a local table on
-- the coordinator.
alter table workhorse.enqueue_observation
  add column if not exists count integer not null default 1 check (count >= 1),
  add column if not exists last_at timestamptz;
