-- Operator actions (issue 12): cancel, run now, redrive with its own idempotency, dead letters,
-- queue pause, and retention of finished jobs. Runs on PostgreSQL 14..18.
--
-- Every statement below that reads or writes key bindings goes through three small functions,
-- workhorse.move_live_keys(), workhorse.job_owns_live_key() and workhorse.release_keys(), so a
-- change to how bindings are stored only has to touch those.

-- Cancel of an active job is a request: the worker sees it at its next heartbeat.
-- redriven_from: the failed job this one was redriven from (docs/operator-actions.md); the reverse link is the index.
alter table workhorse.job
  add column cancel_requested_at timestamptz,
  add column cancel_requested_by text,
  add column cancel_reason       text,
  add column redriven_from       uuid;
create index job_redriven_from_idx on workhorse.job (redriven_from) where redriven_from is not null;
-- Dead letters, newest finished first (keyset pages on (finished_at, id)).
create index job_dead_letter_idx on workhorse.job (finished_at desc, id desc) where state = 'failed';
-- Retention walks terminal jobs by the time they became terminal (updated_at is not touched afterwards).
create index job_terminal_idx on workhorse.job (updated_at)
  where state in ('succeeded', 'failed', 'canceled', 'purged');

-- Redrive idempotency: one row per (source job, HMAC of the caller's request id). The raw request
-- id is never stored. requested_by and reason are what a repeat must match to replay.
create table workhorse.redrive_request (
  source_job_id uuid not null,
  request_hash  workhorse.key_hash not null,
  requested_by  text not null,
  reason        text not null,
  job_id        uuid not null,
  created_at    timestamptz not null default now(),
  primary key (source_job_id, request_hash)
);

-- Paused queues: workers claim nothing from them (claim_jobs below skips them).
create table workhorse.queue_pause (
  queue     workhorse.name_text primary key,
  paused_at timestamptz not null default now(),
  paused_by text not null,
  reason    text not null
);
create trigger job_cancel_instead_of_retry before update of state on workhorse.job
  for each row when (old.state = 'active' and new.state in ('ready', 'scheduled') and old.cancel_requested_at is not null)
  execute function workhorse.job_cancel_instead_of_retry();
