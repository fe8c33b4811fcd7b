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

-- A job that leaves 'active' by any path (outcome, lease reaping, release, an operator's cancel)
-- frees its key. The WHEN clause keeps the trigger off every other update.
create function workhorse.job_left_active() returns trigger language plpgsql as $$
begin
  delete from workhorse.concurrency_slot s where s.concurrency_key = old.concurrency_key and s.job_id = old.id;
  return null;
end $$;
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

-- No foreign keys to workhorse.job (a FK would make TRUNCATE of the job table fail and cost a row
-- lock per insert); deleting or truncating jobs takes their checkpoints and slots with them.
create function workhorse.job_deleted_worker_rows() returns trigger language plpgsql as $$
begin
  delete from workhorse.job_checkpoint c using deleted_jobs d where c.job_id = d.id;
  delete from workhorse.concurrency_slot s using deleted_jobs d where s.job_id = d.id;
  return null;
end $$;
create trigger job_deleted_release_worker_rows after delete on workhorse.job
  referencing old table as deleted_jobs for each statement execute function workhorse.job_deleted_worker_rows();

create function workhorse.job_truncated_worker_rows() returns trigger language plpgsql as $$
begin
  truncate workhorse.job_checkpoint, workhorse.concurrency_slot;
  return null;
end $$;
create trigger job_truncated_release_worker_rows after truncate on workhorse.job
  for each statement execute function workhorse.job_truncated_worker_rows();

-- Retry delay in ms after attempt p_attempt (1-based) failed: initialDelayMs * multiplier^(attempt-1),
-- capped at maxDelayMs. The exponent is capped too (multiplier >= 2 passes any cap long before 60).
create function workhorse.retry_delay_ms(p_policy jsonb, p_attempt integer) returns bigint
language sql immutable as $$
  select least((p_policy ->> 'maxDelayMs')::numeric,
               (p_policy ->> 'initialDelayMs')::numeric
                 * power((p_policy ->> 'multiplier')::numeric, least(greatest(p_attempt - 1, 0), 60)))::bigint
$$;

-- Lapsed leases (the worker stopped heartbeating: crashed, partitioned, paused) in the given queues,
-- oldest first, at most p_limit, skipping rows another transaction holds. Each gets a lease_expired
-- event and goes back to 'ready' (run_at unchanged, so it is first in line) for a new attempt, or
-- to 'failed' when that was its last attempt or its deadline has passed.
create function workhorse.reap_expired_leases(p_queues text[], p_limit integer)
returns integer language plpgsql as $$
declare
  v_count integer;
begin
  with lapsed as (
    select j.id, j.lease_owner, j.lease_expires_at
      from workhorse.job j
     where j.state = 'active' and j.lease_expires_at < now() and (p_queues is null or j.queue = any (p_queues))
     order by j.lease_expires_at
     limit p_limit
       for update of j skip locked
  ),
  upd as (
    update workhorse.job j
       set state = case when j.attempt >= j.max_attempts or j.deadline <= now() then 'failed' else 'ready' end,
           lease_expires_at = null,
           lease_owner = null,
           updated_at = now(),
           finished_at = case when j.attempt >= j.max_attempts or j.deadline <= now() then now() end,
           last_error = jsonb_build_object('name', 'LeaseExpired',
                          'message', format('attempt %s: lease held by %s lapsed at %s', j.attempt, l.lease_owner,
                                            l.lease_expires_at))
      from lapsed l
     where j.id = l.id
    returning j.id, j.state, j.attempt, j.deadline, l.lease_owner, l.lease_expires_at
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select u.id, e.kind, e.data
      from upd u
     cross join lateral (
       values (1, 'lease_expired', jsonb_build_object('attempt', u.attempt, 'worker', u.lease_owner,
                                                     'leaseExpiresAt', u.lease_expires_at)),
              (2, case when u.state <> 'failed' then null
                       when u.deadline <= now() then 'deadline_exceeded' end,
                  jsonb_build_object('attempt', u.attempt, 'deadline', u.deadline)),
              (3, case when u.state = 'failed' then 'failed' end,
                  jsonb_build_object('attempt', u.attempt,
                                     'reason', case when u.deadline <= now() then 'deadline_exceeded'
                                                    else 'max_attempts' end))
     ) as e(ord, kind, data)
     where e.kind is not null
     order by u.id, e.ord
  )
  select count(*) into v_count from upd;
  return v_count;
end $$;

-- Claims up to p_limit due jobs ('scheduled' or 'ready' with run_at <= now()) of the given queues
-- (and types, when p_types is not null), oldest run_at first, and takes their lease in the same
-- statement: state 'active', attempt + 1, lease_owner, lease_expires_at, started_at, a 'claimed'
-- event. FOR UPDATE SKIP LOCKED lets any number of claimers run at once without blocking each other
-- or taking the same job. A due job whose deadline has passed fails with deadline_exceeded instead.
-- Concurrency keys: candidates whose key already has an active job are filtered out (so they do not
-- crowd the limit); the slot insert then decides races between claimers (see workhorse.concurrency_slot).
-- Keys are inserted in sorted order so two claimers never wait on each other in a cycle.
-- With p_reap, lapsed leases of these queues are reaped first (workhorse.reap_expired_leases).
create function workhorse.claim_jobs(p_queues text[], p_types text[], p_owner text, p_limit integer,
                                     p_lease_ms integer, p_reap boolean)
returns table (id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer,
               run_at timestamptz, deadline timestamptz, execution_timeout_ms bigint, concurrency_key text,
               tags text[], created_at timestamptz, lease_expires_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
begin
  -- The claim's commit need not wait for its WAL flush. If the server crashes before the flush, the
  -- claim is lost and the job is simply pending again (run again: at least once); an outcome, which
  -- is flushed, can never outlive its claim, because WAL is flushed in order.
  perform set_config('synchronous_commit', 'off', true);
  if p_reap then
    perform workhorse.reap_expired_leases(p_queues, 100);
  end if;

  return query
  with cand as (
    -- Per queue, so each scan walks job_pending_idx (queue, run_at) in order and stops at the limit
    -- (`queue = any (...)` would read and sort every due job). With several queues, up to p_limit
    -- rows per queue are locked for the moment of this statement and the oldest p_limit are taken.
    select x.id, x.concurrency_key, x.deadline, x.run_at
      from unnest(p_queues) as qn(name)
     cross join lateral (
       select j.id, j.concurrency_key, j.deadline, j.run_at
         from workhorse.job j
        where j.queue = qn.name
          and j.state in ('scheduled', 'ready')
          and j.run_at <= now()
          and (p_types is null or j.type = any (p_types))
          and (j.concurrency_key is null
               or not exists (select 1 from workhorse.concurrency_slot s where s.concurrency_key = j.concurrency_key))
        order by j.run_at
        limit p_limit
          for update of j skip locked
     ) x
     order by x.run_at
     limit p_limit
  ),
  overdue as (
    update workhorse.job j
       set state = 'failed', finished_at = now(), updated_at = now(),
           last_error = jsonb_build_object('name', 'DeadlineExceeded',
                                           'message', format('deadline %s passed before the job ran', j.deadline))
      from cand c
     where j.id = c.id and c.deadline <= now()
    returning j.id, j.attempt, j.deadline
  ),
  overdue_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select o.id, e.kind, jsonb_build_object('attempt', o.attempt, 'deadline', o.deadline)
                          || case when e.kind = 'failed' then '{"reason":"deadline_exceeded"}'::jsonb else '{}' end
      from overdue o cross join (values (1, 'deadline_exceeded'), (2, 'failed')) as e(ord, kind)
     order by o.id, e.ord
  ),
  slots as (
    insert into workhorse.concurrency_slot (concurrency_key, job_id)
    select k.concurrency_key, k.id
      from (select distinct on (c.concurrency_key) c.concurrency_key, c.id
              from cand c
             where c.concurrency_key is not null and (c.deadline is null or c.deadline > now())
             order by c.concurrency_key, c.run_at) k
     order by k.concurrency_key
    on conflict do nothing
    returning job_id
  ),
  claimed as (
    update workhorse.job j
       set state = 'active',
           attempt = j.attempt + 1,
           lease_owner = p_owner,
           lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
           started_at = now(),
           updated_at = now()
      from cand c
     where j.id = c.id
       and (c.deadline is null or c.deadline > now())
       and (c.concurrency_key is null or c.id in (select s.job_id from slots s))
    returning j.*
  ),
  claimed_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select c.id, 'claimed',
           jsonb_build_object('attempt', c.attempt, 'worker', p_owner, 'leaseExpiresAt', c.lease_expires_at)
      from claimed c
  )
  -- Domain-typed columns (001's stored bounds) are returned as their base types.
  select c.id, c.queue::text, c.type::text, c.payload, c.attempt::integer, c.max_attempts::integer, c.run_at,
         c.deadline, c.execution_timeout_ms::bigint, c.concurrency_key, c.tags::text[], c.created_at,
         c.lease_expires_at
    from claimed c
   order by c.run_at;
end $$;

-- Extends the leases of running attempts. Returns the ids still held; an attempt missing from the
-- answer has lost its lease (reaped, or finished by someone else) and should stop.
create function workhorse.heartbeat_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_lease_ms integer)
returns table (id uuid, attempt integer, lease_owner text, lease_expires_at timestamptz)
language sql as $$
  update workhorse.job j
     set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
   where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
  returning j.id, j.attempt, j.lease_owner, j.lease_expires_at
$$;

-- Records successful attempts: state 'succeeded', result stored, a 'succeeded' event. Fenced; returns
-- the ids that were recorded (a stale attempt's id is simply absent).
create function workhorse.complete_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_results jsonb[])
returns table (id uuid)
language sql as $$
  with done as (
    update workhorse.job j
       set state = 'succeeded', result = r.result, finished_at = now(), updated_at = now(), lease_expires_at = null
      from unnest(p_ids, p_attempts, p_owners, p_results) as r(id, attempt, owner, result)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.started_at
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select d.id, 'succeeded',
           jsonb_build_object('attempt', d.attempt, 'worker', d.lease_owner,
                              'durationMs', round(extract(epoch from now() - d.started_at) * 1000))
      from done d
  )
  select d.id from done d
$$;

-- Records a failed attempt. p_cause: 'error' (the handler threw), 'execution_timed_out' (its
-- executionTimeoutMs elapsed) or 'deadline_exceeded' (the job's deadline passed while it ran).
-- Then: the deadline has passed, or the next run would be at or after it -> 'failed' with a
-- deadline_exceeded event; attempts exhausted -> 'failed'; otherwise 'scheduled' (or 'ready' for a
-- zero delay) at now() + the retry policy's delay, with a retry_scheduled event. The job's own
-- retry_policy wins over p_default_policy. Fenced: returns no row for a stale attempt.
create function workhorse.fail_job(p_id uuid, p_attempt integer, p_owner text, p_error jsonb, p_cause text,
                                   p_default_policy jsonb)
returns table (state text, run_at timestamptz, delay_ms bigint)
language plpgsql as $$
#variable_conflict use_column
declare
  j record;
  v_delay bigint;
  v_next timestamptz;
  v_state text;
  v_reason text;
begin
  select x.id, x.attempt, x.max_attempts, x.deadline, x.retry_policy
    into j
    from workhorse.job x
   where x.id = p_id and x.attempt = p_attempt and x.lease_owner = p_owner and x.state = 'active'
     for update;
  if not found then
    return;
  end if;

  v_delay := workhorse.retry_delay_ms(coalesce(j.retry_policy, p_default_policy), j.attempt);
  v_next := now() + v_delay * interval '1 millisecond';
  if p_cause = 'deadline_exceeded' or j.deadline <= now() or j.deadline <= v_next then
    v_state := 'failed';
    v_reason := 'deadline_exceeded';
  elsif j.attempt >= j.max_attempts then
    v_state := 'failed';
    v_reason := 'max_attempts';
  else
    v_state := case when v_delay > 0 then 'scheduled' else 'ready' end;
  end if;

  update workhorse.job x
     set state = v_state,
         run_at = case when v_state = 'failed' then x.run_at else v_next end,
         finished_at = case when v_state = 'failed' then now() end,
         lease_expires_at = null,
         last_error = p_error,
         updated_at = now()
   where x.id = p_id;

  if p_cause = 'execution_timed_out' then
    insert into workhorse.job_event (job_id, kind, data)
    values (p_id, 'execution_timed_out', jsonb_build_object('attempt', j.attempt, 'worker', p_owner));
  end if;
  if v_reason = 'deadline_exceeded' then
    insert into workhorse.job_event (job_id, kind, data)
    values (p_id, 'deadline_exceeded', jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline));
  end if;
  if v_state = 'failed' then
    insert into workhorse.job_event (job_id, kind, data)
    values (p_id, 'failed', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'reason', v_reason,
                                               'cause', p_cause, 'error', p_error));
    return query select v_state, null::timestamptz, null::bigint;
  else
    insert into workhorse.job_event (job_id, kind, data)
    values (p_id, 'retry_scheduled', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'cause', p_cause,
                                                        'runAt', v_next, 'delayMs', v_delay, 'error', p_error));
    return query select v_state, v_next, v_delay;
  end if;
end $$;

-- Gives running attempts back without counting them (worker shutdown after its grace period): state
-- 'ready', attempt - 1, a 'released' event. Fenced; returns the ids released. A later stale answer
-- from the released attempt still cannot match: lease_owner names the next claimer.
create function workhorse.release_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_reason text)
returns table (id uuid)
language sql as $$
  with rel as (
    update workhorse.job j
       set state = 'ready', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
      from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
    returning j.id, r.attempt, r.owner
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.id, 'released', jsonb_build_object('attempt', r.attempt, 'worker', r.owner, 'reason', p_reason)
      from rel r
  )
  select r.id from rel r
$$;

-- Stores a checkpoint of a running attempt with its checkpoint_saved event, and extends the lease
-- (the attempt is evidently alive). status: 'saved'; 'exists' when this (job, name) was saved
-- already (value: the stored one, which wins); 'stale' when the attempt no longer holds the job.
create function workhorse.save_checkpoint(p_id uuid, p_attempt integer, p_owner text, p_name text, p_value jsonb,
                                          p_lease_ms integer)
returns table (status text, value jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_stored jsonb;
begin
  update workhorse.job j
     set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
   where j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner and j.state = 'active';
  if not found then
    return query select 'stale'::text, null::jsonb;
    return;
  end if;
  insert into workhorse.job_checkpoint (job_id, name, attempt, value)
  values (p_id, p_name, p_attempt, p_value)
  on conflict (job_id, name) do nothing;
  if not found then
    select c.value into v_stored from workhorse.job_checkpoint c where c.job_id = p_id and c.name = p_name;
    return query select 'exists'::text, v_stored;
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  values (p_id, 'checkpoint_saved', jsonb_build_object('attempt', p_attempt, 'name', p_name, 'worker', p_owner));
  return query select 'saved'::text, p_value;
end $$;
