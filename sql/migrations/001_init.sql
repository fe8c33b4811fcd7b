-- Workhorse schema: jobs, idempotency bindings, job events, enqueue observations, operator audit.
-- Runs on PostgreSQL 14..18: gen_random_uuid() and sha256() are core since 13/11; nothing newer.

-- Stored bounds (docs/enqueue.md, input rules) are CHECK constraints on domains rather than on the tables: PostgreSQL
-- rebuilds a table's CHECK expressions for every INSERT statement it executes (about 40-50 µs for
-- these, measured by bench/micro-checks.ts), while a domain's checks are prepared once per session.
-- A buggy client is refused all the same.
create domain workhorse.name_text as text
  check (char_length(value) between 1 and 128 and value !~ '[[:cntrl:]]');
create domain workhorse.job_state as text
  check (value in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged'));
create domain workhorse.attempt_count as integer check (value >= 0);
create domain workhorse.max_attempts as integer check (value between 1 and 1000);
create domain workhorse.duration_ms as bigint check (value between 1 and 31536000000);
create domain workhorse.tag_list as text[] check (cardinality(value) <= 32);
create domain workhorse.scope_text as text check (octet_length(value) between 1 and 256);
create domain workhorse.key_hash as bytea check (octet_length(value) = 32);
create domain workhorse.key_mode as text check (value in ('idempotency', 'debounce', 'throttle'));
create domain workhorse.key_preview as text check (char_length(value) between 1 and 9);
create domain workhorse.key_length as integer check (value between 1 and 512);
create domain workhorse.sha256_hex as text check (char_length(value) = 64);

create table workhorse.job (
  id                   uuid primary key,  -- UUIDv7 from the client: time-ordered, so the pk serves "newest first"
  queue                workhorse.name_text not null,
  type                 workhorse.name_text not null,
  payload              jsonb not null,
  state                workhorse.job_state not null,
  run_at               timestamptz not null,
  attempt              workhorse.attempt_count not null default 0,
  max_attempts         workhorse.max_attempts not null,
  retry_policy         jsonb,
  deadline             timestamptz,
  execution_timeout_ms workhorse.duration_ms,
  concurrency_key      text,
  tags                 workhorse.tag_list not null default '{}',
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  lease_owner          text,
  lease_expires_at     timestamptz,
  started_at           timestamptz,
  finished_at          timestamptz,
  result               jsonb,
  last_error           jsonb,
  purged_at            timestamptz,
  purged_by            text,
  purge_reason         text,
  constraint job_deadline_after_run_at check (deadline is null or deadline > run_at)
);

-- Claiming and per-queue purge read only pending jobs; a partial index stays small.
create index job_pending_idx on workhorse.job (queue, run_at) where state in ('scheduled', 'ready');
-- Expired leases are found without scanning finished jobs.
create index job_lease_idx on workhorse.job (lease_expires_at) where state = 'active';

create table workhorse.idempotency_binding (
  scope          workhorse.scope_text not null,
  key_hash       workhorse.key_hash not null,
  job_id         uuid not null,
  mode           workhorse.key_mode not null,
  key_preview    workhorse.key_preview not null,
  key_length     workhorse.key_length not null,
  field_digests  text[] not null,
  request_digest workhorse.sha256_hex not null,
  ttl_ms         workhorse.duration_ms not null,
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  primary key (scope, key_hash)
);
create index idempotency_binding_job_idx on workhorse.idempotency_binding (job_id);
create index idempotency_binding_expires_idx on workhorse.idempotency_binding (expires_at);
create trigger job_deleted_release_bindings after delete on workhorse.job
  referencing old table as deleted_jobs for each statement execute function workhorse.job_deleted();
create trigger job_truncated_release_bindings after truncate on workhorse.job
  for each statement execute function workhorse.job_truncated();

create table workhorse.job_event (
  job_id uuid not null,
  seq    bigint generated always as identity,
  at     timestamptz not null default now(),
  kind   text not null,
  data   jsonb,
  primary key (job_id, seq)
);

create table workhorse.enqueue_observation (
  id                      bigint generated always as identity primary key,
  at                      timestamptz not null,
  outcome                 text not null check (outcome in ('replayed', 'conflict', 'coalesced', 'non_replaceable')),
  reason                  text,
  queue                   text not null,
  type                    text not null,
  scope                   text not null,
  key_preview             text not null,
  key_digest              text not null,
  key_length              integer not null,
  job_id                  uuid,
  conflicting_fields      text[],
  payload_paths           text[],
  stored_request_digest   text,
  rejected_request_digest text,
  source                  text
);
create index enqueue_observation_at_idx on workhorse.enqueue_observation (at);

create table workhorse.operator_audit (
  id     uuid primary key default gen_random_uuid(),
  at     timestamptz not null default now(),
  actor  text not null,
  action text not null,
  target text not null,
  reason text,
  result jsonb not null
);
create index operator_audit_at_idx on workhorse.operator_audit (at);

create table workhorse.maintenance_run (
  id       uuid primary key default gen_random_uuid(),
  task     text not null,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  removed  bigint not null,
  trigger  text not null
);
create index maintenance_run_task_idx on workhorse.maintenance_run (task, started_at);
