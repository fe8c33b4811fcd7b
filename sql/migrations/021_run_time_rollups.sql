-- Rollups that keep the run-times page (lib/console/run-times.ts) bounded however many jobs finish,
-- written by the same maintenance step as run_time_bucket (rollupRunTimesBatch,
-- lib/enqueue/store/console-runtimes.ts). Local tables (on Citus: on the coordinator, like
-- run_time_bucket), a few rows per hour or day, kept 30 days.
--
-- failure_bucket: failed jobs per finished hour, queue, type and error name (`last_error ->> 'name'`,
-- 'Error' when it has none), for the dead-letter groups' error trend (the last 24 hours against the
-- 24 before). Its first maintenance run fills the last 48 hours from the jobs.
create table if not exists workhorse.failure_bucket (
  hour       timestamptz not null,
  queue      text not null,
  type       text not null,
  error_name text not null,
  failed     integer not null,
  primary key (hour, queue, type, error_name)
);

-- run_time_day: run_time_bucket summed per UTC day (whole days only), for the 7-day figures: seven
-- days are 7 x (pairs x buckets) rows instead of 168 hours of them. Maintenance rewrites the days
-- whose hours it rolled up; the days already in run_time_bucket are summed here once.
create table if not exists workhorse.run_time_day (
  day       timestamptz not null,
  queue     text not null,
  type      text not null,
  bucket    smallint not null,
  succeeded integer not null,
  failed    integer not null,
  primary key (day, queue, type, bucket)
);
insert into workhorse.run_time_day (day, queue, type, bucket, succeeded, failed)
select date_trunc('day', hour, 'UTC'), queue, type, bucket, sum(succeeded), sum(failed)
  from workhorse.run_time_bucket
 where hour < date_trunc('day', now(), 'UTC')
 group by 1, 2, 3, 4
on conflict do nothing;
