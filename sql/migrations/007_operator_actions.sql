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

-- ---------------------------------------------------------------------------------------------
-- The only functions here that know how key bindings are stored.

-- Moves every live binding owned by p_from to p_to (redrive: the caller's replay then finds the job
-- that will run). Expired bindings stay where they are: they own nothing. Returns how many moved.
create function workhorse.move_live_keys(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
declare
  v_moved integer;
begin
  update workhorse.idempotency_binding b set job_id = p_to
   where b.job_id = p_from and b.expires_at > now();
  get diagnostics v_moved = row_count;
  return v_moved;
end $$;

-- Releases every binding the given jobs own, and only those (bulk purge). Returns how many.
create function workhorse.release_keys(p_jobs uuid[]) returns integer
language plpgsql as $$
declare
  v_released integer;
begin
  delete from workhorse.idempotency_binding b where b.job_id = any (p_jobs);
  get diagnostics v_released = row_count;
  return v_released;
end $$;

-- True while some live binding names this job (retention must keep such a job: a replay returns it).
create function workhorse.job_owns_live_key(p_job uuid) returns boolean
language sql stable as $$
  select exists (select 1 from workhorse.idempotency_binding b where b.job_id = p_job and b.expires_at > now())
$$;
-- ---------------------------------------------------------------------------------------------

-- Cancel (docs/operator-actions.md). scheduled/ready jobs become canceled at once (canceled event); active jobs are
-- flagged (cancel_requested event) and their worker stops them at its next heartbeat; anything else
-- is left alone. Bindings are kept. One operator_audit row.
-- Returns canceled, cancel_requested, and unchanged: {state or 'missing': count} for the rest.
create function workhorse.cancel_jobs(p_ids uuid[], p_actor text, p_reason text)
returns table (canceled integer, cancel_requested integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_canceled integer;
  v_requested integer;
  v_unchanged jsonb;
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  locked as (
    select j.id, j.state from workhorse.job j join ids on ids.id = j.id order by j.id for update of j
  ),
  now_canceled as (
    update workhorse.job j
       set state = 'canceled', finished_at = now(), updated_at = now(), cancel_requested_at = now(),
           cancel_requested_by = p_actor, cancel_reason = p_reason
      from locked l
     where j.id = l.id and l.state in ('scheduled', 'ready')
    returning j.id
  ),
  requested as (
    update workhorse.job j
       set cancel_requested_at = now(), cancel_requested_by = p_actor, cancel_reason = p_reason, updated_at = now()
      from locked l
     where j.id = l.id and l.state = 'active'
    returning j.id, j.attempt
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select c.id, 'canceled', jsonb_build_object('actor', p_actor, 'reason', p_reason) from now_canceled c
    union all
    select r.id, 'cancel_requested', jsonb_build_object('actor', p_actor, 'reason', p_reason, 'attempt', r.attempt)
      from requested r
  )
  select (select count(*) from now_canceled), (select count(*) from requested),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(l.state, 'missing') as state, count(*) as n
                    from ids left join locked l on l.id = ids.id
                   where l.state is null or l.state not in ('scheduled', 'ready', 'active')
                   group by 1) s)
    into v_canceled, v_requested, v_unchanged;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'cancel',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('requested', cardinality(p_ids), 'canceled', v_canceled,
                             'cancelRequested', v_requested, 'unchanged', v_unchanged));
  return query select v_canceled, v_requested, v_unchanged;
end $$;

-- The worker's side of a cancel: records the attempt as canceled (fenced like every outcome).
create function workhorse.cancel_attempt(p_id uuid, p_attempt integer, p_owner text)
returns table (id uuid)
language sql as $$
  with done as (
    update workhorse.job j
       set state = 'canceled', finished_at = now(), updated_at = now(), lease_expires_at = null
     where j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.cancel_requested_by, j.cancel_reason
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select d.id, 'canceled', jsonb_build_object('attempt', d.attempt, 'worker', d.lease_owner,
                                                'actor', d.cancel_requested_by, 'reason', d.cancel_reason)
      from done d
  )
  select d.id from done d
$$;

-- An active job an operator asked to cancel never goes back to the queue: if its attempt ends by any
-- path that would make it pending again (a thrown error with attempts left, a lapsed lease, a
-- shutdown release) before its worker saw the request, it becomes canceled instead.
create function workhorse.job_cancel_instead_of_retry() returns trigger language plpgsql as $$
begin
  new.state := 'canceled';
  new.finished_at := now();
  new.lease_owner := null;
  new.lease_expires_at := null;
  insert into workhorse.job_event (job_id, kind, data)
  values (new.id, 'canceled', jsonb_build_object('attempt', old.attempt, 'actor', old.cancel_requested_by,
                                                 'reason', old.cancel_reason));
  return new;
end $$;
create trigger job_cancel_instead_of_retry before update of state on workhorse.job
  for each row when (old.state = 'active' and new.state in ('ready', 'scheduled') and old.cancel_requested_at is not null)
  execute function workhorse.job_cancel_instead_of_retry();

-- Heartbeat, now also telling the worker which attempts an operator asked to cancel.
drop function workhorse.heartbeat_jobs(uuid[], integer[], text[], integer);
create function workhorse.heartbeat_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_lease_ms integer)
returns table (id uuid, attempt integer, lease_owner text, lease_expires_at timestamptz, cancel_requested boolean)
language sql as $$
  update workhorse.job j
     set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
   where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
  returning j.id, j.attempt, j.lease_owner, j.lease_expires_at, j.cancel_requested_at is not null
$$;

-- Run now: scheduled jobs become ready with run_at = now(); a run_now event; one audit row.
create function workhorse.run_jobs_now(p_ids uuid[], p_actor text, p_reason text)
returns table (updated integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_updated integer;
  v_unchanged jsonb;
  v_queues text[];
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  upd as (
    update workhorse.job j set state = 'ready', run_at = now(), updated_at = now()
      from ids where j.id = ids.id and j.state = 'scheduled'
    returning j.id, j.queue
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select u.id, 'run_now', jsonb_build_object('actor', p_actor, 'reason', p_reason) from upd u
  )
  select (select count(*) from upd), (select array_agg(distinct u.queue) from upd u),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(j.state, 'missing') as state, count(*) as n
                    from ids left join workhorse.job j on j.id = ids.id
                   where ids.id not in (select u.id from upd u)
                   group by 1) s)
    into v_updated, v_queues, v_unchanged;
  perform pg_notify('workhorse_jobs', q) from unnest(v_queues) q;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'run_now',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason, jsonb_build_object('requested', cardinality(p_ids), 'updated', v_updated, 'unchanged', v_unchanged));
  return query select v_updated, v_unchanged;
end $$;

-- Redrive (docs/operator-actions.md). For each source (p_sources[i], with p_new_ids[i] the id a new job would get):
--   a redrive_request for (source, p_request_hash) exists -> 'replayed' with its job, provided the
--     requester and reason match, else WH412 (nothing written: the whole call rolls back);
--   no such job -> 'not_found'; not failed -> 'not_failed';
--   p_dry_run -> 'eligible' (nothing written);
--   otherwise -> 'redriven': a new ready job at attempt 0 copying queue, type, payload, tags,
--     concurrency key, retry policy, max attempts and execution timeout (not the deadline, not
--     checkpoints), redriven_from = source, an enqueued event on it and a redriven event on the
--     source, the source's live keys moved to it (workhorse.move_live_keys).
-- One audit row unless p_dry_run.
create function workhorse.redrive_jobs(p_sources uuid[], p_new_ids uuid[], p_request_hash bytea, p_actor text,
                                       p_reason text, p_dry_run boolean)
returns table (source_job_id uuid, status text, job_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  v_src record;
  v_status text[] := '{}';
  v_src_ids uuid[] := '{}';
  v_job_ids uuid[] := '{}';
  v_moved integer := 0;
  v_queues text[] := '{}';
begin
  -- Every source is locked up front, in id order: overlapping bulk redrives queue instead of
  -- deadlocking, and a concurrent identical request, once the first commits, finds its
  -- redrive_request (each statement below reads a fresh snapshot) and replays.
  if not p_dry_run then
    perform 1 from workhorse.job j where j.id = any (p_sources) order by j.id for update;
  end if;
  for r in select s.src, s.new_id, s.ord
             from unnest(p_sources, p_new_ids) with ordinality as s(src, new_id, ord)
            order by s.ord loop
    if r.src = any (v_src_ids) then
      -- The same source twice in one call: same answer as the first time.
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || (case when v_status[array_position(v_src_ids, r.src)] = 'redriven' then 'replayed'
                                    else v_status[array_position(v_src_ids, r.src)] end);
      v_job_ids := v_job_ids || v_job_ids[array_position(v_src_ids, r.src)];
      continue;
    end if;
    select q.job_id, q.requested_by, q.reason into v_src
      from workhorse.redrive_request q where q.source_job_id = r.src and q.request_hash = p_request_hash;
    if found then
      if v_src.requested_by is distinct from p_actor or v_src.reason is distinct from p_reason then
        raise exception using
          errcode = 'WH412',
          message = 'workhorse: redrive request id reused with a different request',
          detail = jsonb_build_object(
            'sourceJobId', r.src, 'existingJobId', v_src.job_id,
            'conflictingFields', to_jsonb(array_remove(array[
              case when v_src.reason is distinct from p_reason then 'reason' end,
              case when v_src.requested_by is distinct from p_actor then 'requestedBy' end], null)))::text;
      end if;
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || 'replayed'::text;
      v_job_ids := v_job_ids || v_src.job_id;
      continue;
    end if;
    select j.id, j.state, j.queue, j.type, j.payload, j.tags, j.concurrency_key, j.retry_policy, j.max_attempts,
           j.execution_timeout_ms
      into v_src
      from workhorse.job j where j.id = r.src for update;
    v_src_ids := v_src_ids || r.src;
    if not found then
      v_status := v_status || 'not_found'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif v_src.state <> 'failed' then
      v_status := v_status || 'not_failed'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif p_dry_run then
      v_status := v_status || 'eligible'::text;
      v_job_ids := v_job_ids || null::uuid;
    else
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy,
                                 execution_timeout_ms, concurrency_key, tags, redriven_from)
      values (r.new_id, v_src.queue, v_src.type, v_src.payload, 'ready', now(), v_src.max_attempts,
              v_src.retry_policy, v_src.execution_timeout_ms, v_src.concurrency_key, v_src.tags, r.src);
      insert into workhorse.redrive_request (source_job_id, request_hash, requested_by, reason, job_id)
      values (r.src, p_request_hash, p_actor, p_reason, r.new_id);
      v_moved := v_moved + workhorse.move_live_keys(r.src, r.new_id);
      insert into workhorse.job_event (job_id, kind, data)
      values (r.new_id, 'enqueued', jsonb_build_object('queue', v_src.queue, 'runAt', now(), 'redrivenFrom', r.src,
                                                       'actor', p_actor, 'reason', p_reason)),
             (r.src, 'redriven', jsonb_build_object('jobId', r.new_id, 'actor', p_actor, 'reason', p_reason));
      v_queues := v_queues || v_src.queue::text;
      v_status := v_status || 'redriven'::text;
      v_job_ids := v_job_ids || r.new_id;
    end if;
  end loop;

  perform pg_notify('workhorse_jobs', q) from (select distinct unnest(v_queues) as q) x;
  if not p_dry_run then
    insert into workhorse.operator_audit (actor, action, target, reason, result)
    select p_actor, 'redrive',
           case when cardinality(p_sources) = 1 then 'job:' || p_sources[1] else 'jobs:' || cardinality(p_sources) end,
           p_reason,
           jsonb_build_object('requested', cardinality(p_sources), 'movedKeys', v_moved)
             || coalesce((select jsonb_object_agg(s.status, s.n)
                            from (select u.st as status, count(*) as n from unnest(v_status) u(st) group by 1) s), '{}');
  end if;
  return query select * from unnest(v_src_ids, v_status, v_job_ids);
end $$;

-- Bulk purge (the console's selection): as workhorse.purge_jobs for each ready/scheduled job, with
-- the rest counted by state ('missing' for unknown ids) and one audit row for the whole call.
create function workhorse.purge_job_list(p_ids uuid[], p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_purged uuid[];
  v_released integer;
  v_unchanged jsonb;
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  p as (
    update workhorse.job j
       set state = 'purged', purged_at = now(), purged_by = p_actor, purge_reason = p_reason, updated_at = now()
      from ids
     where j.id = ids.id and j.state in ('ready', 'scheduled')
    returning j.id
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select p.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from p
  )
  select coalesce((select array_agg(p.id) from p), '{}'),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(j.state, 'missing') as state, count(*) as n
                    from ids left join workhorse.job j on j.id = ids.id
                   where ids.id not in (select p.id from p)
                   group by 1) s)
    into v_purged, v_unchanged;
  v_released := workhorse.release_keys(v_purged);
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'purge_job',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'purged', cardinality(v_purged),
                             'releasedBindings', v_released, 'unchanged', v_unchanged));
  return query select cardinality(v_purged), v_released, v_unchanged;
end $$;

-- Pause / resume one queue; one audit row each. Returns whether anything changed.
create function workhorse.pause_queue(p_queue text, p_actor text, p_reason text) returns boolean
language plpgsql as $$
declare
  v_changed boolean;
begin
  insert into workhorse.queue_pause (queue, paused_by, reason) values (p_queue, p_actor, p_reason)
  on conflict (queue) do nothing;
  v_changed := found;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'pause_queue', 'queue:' || p_queue, p_reason,
          jsonb_build_object('paused', case when v_changed then 1 else 0 end,
                             'status', case when v_changed then 'ok' else 'already_paused' end));
  return v_changed;
end $$;

create function workhorse.resume_queue(p_queue text, p_actor text, p_reason text) returns boolean
language plpgsql as $$
declare
  v_changed boolean;
begin
  delete from workhorse.queue_pause p where p.queue = p_queue;
  v_changed := found;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'resume_queue', 'queue:' || p_queue, p_reason,
          jsonb_build_object('resumed', case when v_changed then 1 else 0 end,
                             'status', case when v_changed then 'ok' else 'not_paused' end));
  if v_changed then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  return v_changed;
end $$;

-- Retention: deletes up to p_limit terminal jobs that became terminal before now() - p_older_than_ms,
-- oldest first, SKIP LOCKED, never one that owns a live key (workhorse.job_owns_live_key), with their
-- events and redrive requests. Returns the jobs and events deleted.
create function workhorse.prune_finished_jobs(p_older_than_ms bigint, p_limit integer)
returns table (jobs_deleted integer, events_deleted integer)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_events integer;
begin
  select coalesce(array_agg(d.id), '{}') into v_ids
    from (select j.id from workhorse.job j
           where j.state in ('succeeded', 'failed', 'canceled', 'purged')
             and j.updated_at < now() - p_older_than_ms * interval '1 millisecond'
             and not workhorse.job_owns_live_key(j.id)
           order by j.updated_at
           limit p_limit
             for update of j skip locked) d;
  delete from workhorse.job_event e where e.job_id = any (v_ids);
  get diagnostics v_events = row_count;
  delete from workhorse.redrive_request q where q.source_job_id = any (v_ids);
  delete from workhorse.job j where j.id = any (v_ids);
  return query select cardinality(v_ids), v_events;
end $$;

-- Claiming, as in 003, but never from a paused queue.
create or replace function workhorse.claim_jobs(p_queues text[], p_types text[], p_owner text, p_limit integer,
                                     p_lease_ms integer, p_reap boolean)
returns table (id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer,
               run_at timestamptz, deadline timestamptz, execution_timeout_ms bigint, concurrency_key text,
               tags text[], created_at timestamptz, lease_expires_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
begin
  perform set_config('synchronous_commit', 'off', true);
  if p_reap then
    perform workhorse.reap_expired_leases(p_queues, 100);
  end if;

  return query
  with cand as (
    select x.id, x.concurrency_key, x.deadline, x.run_at
      from (select u.name from unnest(p_queues) as u(name)
             where not exists (select 1 from workhorse.queue_pause p where p.queue = u.name)) as qn(name)
     cross join lateral (
       select j.id, j.concurrency_key, j.deadline, j.run_at
         from workhorse.job j
        where j.queue = qn.name
          and j.state in ('scheduled', 'ready')
          and j.run_at <= now()
          and (p_types is null or j.type = any (p_types))
          and (j.concurrency_key is null
               or not exists (select 1 from workhorse.concurrency_slot s where s.concurrency_key = j.concurrency_key))
        order by j.run_at, j.id
        limit p_limit
          for update of j skip locked
     ) x
     order by x.run_at, x.id
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
             order by c.concurrency_key, c.run_at, c.id) k
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
  select c.id, c.queue::text, c.type::text, c.payload, c.attempt::integer, c.max_attempts::integer, c.run_at,
         c.deadline, c.execution_timeout_ms::bigint, c.concurrency_key, c.tags::text[], c.created_at,
         c.lease_expires_at
    from claimed c
   order by c.run_at, c.id;
end $$;
