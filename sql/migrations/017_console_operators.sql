-- What the console shows operators beyond the jobs themselves.
--
-- worker_heartbeat: one row per running Worker, upserted by the worker when it starts and then every
-- heartbeat interval (queues, concurrency, the attempts it holds), marked 'stopping' while it shuts
-- down and deleted when it has stopped. A worker that misses three check-ins in a row is shown as
-- gone; maintenance deletes rows whose last check-in is older than that plus a retention
-- (store/maintenance.ts). One small row per process, rewritten in place (HOT: no indexed column
-- changes but checked_at, which the maintenance index needs only for gone rows, so it stays small).
-- On the distributed layout (Citus) it is a local table on the coordinator, like the other
-- operator tables: workers connect to the coordinator.
create table if not exists workhorse.worker_heartbeat (
  worker_id   text primary key check (length(worker_id) between 1 and 200),
  host        text not null,
  pid         integer not null,
  queues      text[] not null,
  -- The job types it claims; null means every type (a "*" handler).
  types       text[],
  concurrency integer not null check (concurrency > 0),
  -- Attempts whose handler is running, and every attempt it holds (running or writing its outcome).
  running     integer not null check (running >= 0),
  held        integer not null check (held >= 0),
  -- The first few job ids it holds (at most 20), for links.
  job_ids     uuid[] not null default '{}',
  interval_ms integer not null check (interval_ms > 0),
  status      text not null default 'running' check (status in ('running', 'stopping')),
  started_at  timestamptz not null,
  checked_at  timestamptz not null default now()
);
create index if not exists worker_heartbeat_checked_idx on workhorse.worker_heartbeat (checked_at);

-- run_time_bucket: run times beyond the last day, kept by maintenance (store/maintenance.ts
-- rollupRunTimes) as an hourly histogram per queue and type: for each finished hour, how many
-- attempts that ended the job (succeeded or failed) took a duration in each bucket (bucket i holds
-- durations below RUN_TIME_BOUNDS_MS[i], lib/enqueue/store/console-runtimes.ts). Histograms add up,
-- so any span's p50/p95 is read from the sum of its hours (to a bucket's bound). Bounded: hours older
-- than 30 days are deleted by the same task; one row per (hour, queue, type, bucket) in use.
create table if not exists workhorse.run_time_bucket (
  hour      timestamptz not null,
  queue     text not null,
  type      text not null,
  bucket    smallint not null,
  succeeded integer not null,
  failed    integer not null,
  primary key (hour, queue, type, bucket)
);
