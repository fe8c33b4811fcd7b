-- run_time_window (migration 022) also counts the jobs finished since its rolled hours, up to the
-- maintenance run that wrote it, so the run-times page reads from the jobs only those finished since
-- that run (and those that left its last hour since then), not every job since the rolled hours:
-- however many jobs finish in an hour, its counts stay exact (lib/console/run-times.ts).
--
-- taken_at: when maintenance counted `recent` (its clock).
-- recent:   [queue, type, bucket, error name, since succeeded, since failed, hour succeeded, hour
--           failed] per queue, type, duration bucket (null: a failure that never started) and error
--           name (failures only, else null): the jobs finished from rolled_to to taken_at, and within
--           the hour before taken_at.
--
-- Windows written before this version have neither: they are deleted (the page sums the rollups
-- itself until maintenance runs again).
delete from workhorse.run_time_window;
alter table workhorse.run_time_window
  add column taken_at timestamptz not null,
  add column recent   jsonb not null;
