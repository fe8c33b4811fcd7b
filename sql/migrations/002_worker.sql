-- Worker runtime: claiming with leases, fenced outcomes, retries, deadlines, checkpoints and
-- concurrency keys (docs/worker.md). Runs on PostgreSQL 14..18.
--
-- Fencing: an attempt is identified by (job id, attempt, lease_owner). lease_owner is a lease token,
-- '<worker id>~<claim>', new for every claim call, so it stays unique even if a claim is lost in a
-- crash and the same worker claims the job again with the same attempt number, or two workers are
-- misconfigured with one id. Every write a worker makes about a running job (heartbeat, checkpoint,
-- outcome, release) matches all three and state = 'active', so an answer from a stale attempt (its
-- lease lapsed and the job was claimed again) changes nothing.

-- One row per concurrency key that has an active job. Claiming inserts it with ON CONFLICT DO NOTHING:
-- the primary key is checked against committed *and* in-flight rows, so of two claimers racing for
-- one key exactly one wins, whatever their snapshots saw. A row-level check against workhorse.job
-- would not do: under READ COMMITTED each claimer reads a snapshot taken before the other committed.
create table workhorse.concurrency_slot (
  concurrency_key text primary key,
  job_id          uuid not null,
  claimed_at      timestamptz not null default now()
);

-- The invariant itself, enforced by PostgreSQL: at most one active job per concurrency key. The slot
-- table keeps claims from ever tripping it; if anything did, the write fails instead of running two.
create unique index job_active_concurrency_key_idx on workhorse.job (concurrency_key)
  where state = 'active' and concurrency_key is not null;
create trigger job_left_active_free_slot after update of state on workhorse.job
  for each row when (old.state = 'active' and new.state <> 'active' and old.concurrency_key is not null)
  execute function workhorse.job_left_active();

-- Stages a handler finished (HandlerContext.checkpoint): one JSON value per (job, name), written in
-- the same transaction as its checkpoint_saved event, read back by later attempts.
create table workhorse.job_checkpoint (
  job_id     uuid not null,
  name       text not null check (char_length(name) between 1 and 128 and name !~ '[[:cntrl:]]'),
  attempt    integer not null check (attempt >= 1),
  value      jsonb not null,
  created_at timestamptz not null default now(),
  primary key (job_id, name)
);
create trigger job_deleted_release_worker_rows after delete on workhorse.job
  referencing old table as deleted_jobs for each statement execute function workhorse.job_deleted_worker_rows();
create trigger job_truncated_release_worker_rows after truncate on workhorse.job
  for each statement execute function workhorse.job_truncated_worker_rows();
