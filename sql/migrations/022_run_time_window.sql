-- run_time_window: the run-times page's rolled-up part, summed by maintenance (rollupRunTimesBatch,
-- lib/enqueue/store/console-runtimes.ts) instead of by every page view. Each maintenance run writes
-- two rows: for a page read in its own hour, and for one read in the next hour before maintenance
-- runs again. A row per hour the page is read in (`ends_at`); `rolled_to` is where the rolled-up
-- hours end (ends_at, or the hour before it) and the page reads the jobs from there. Rows of past
-- hours are deleted; a local table (on Citus: on the coordinator, like run_time_bucket).
--
-- runs:     [queue, type, bucket, day succeeded, day failed, week succeeded, week failed] per
--           duration bucket: the day is the rolled hours from 23 hours before ends_at, the week the
--           daily rollup's whole UTC days from six days before ends_at's day, then the rolled hours.
-- failures: [queue, type, error name, last day, day before] per dead-letter group: failed jobs of
--           the rolled hours from 23 hours before ends_at, and of the 24 hours before those.
--
-- When no row is for the current hour (maintenance has not run for over an hour), the page sums
-- the rollups itself: same figures, more rows read.
create table if not exists workhorse.run_time_window (
  ends_at   timestamptz primary key,
  rolled_to timestamptz not null,
  runs      jsonb not null,
  failures  jsonb not null
);
