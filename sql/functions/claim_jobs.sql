-- Claiming, as in 003, but never from a paused queue.
-- Until migration 018 the result had no trace_context column. The argument types did not change,
-- so the old function is dropped only while it still has the old result (as heartbeat_jobs.sql does).
do $$
begin
  if pg_get_function_result(to_regprocedure('workhorse.claim_jobs(text[], text[], text, integer, integer, boolean)'))
     not like '%trace_context%' then
    drop function workhorse.claim_jobs(text[], text[], text, integer, integer, boolean);
  end if;
end $$;

create or replace function workhorse.claim_jobs(p_queues text[], p_types text[], p_owner text, p_limit integer,
                                     p_lease_ms integer, p_reap boolean)
returns table (id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer,
               run_at timestamptz, deadline timestamptz, execution_timeout_ms bigint, concurrency_key text,
               tags text[], created_at timestamptz, lease_expires_at timestamptz, trace_context text)
language plpgsql
-- One plan for every call (docs/benchmarks.md, "What the bench found in the core"): a fresh custom
-- plan per call cost more than running it (0.79 against 0.18 ms per claim at 200,000 jobs), and the
-- generic plan walks job_pending_idx as the custom one does.
set plan_cache_mode = force_generic_plan
as $$
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
           -- The same name, message and code a worker records when the deadline passes mid-run
           -- (DeadlineExceededError): one cause, one dead-letter group.
           last_error = jsonb_build_object('name', 'DeadlineExceededError',
                                           'message', format('The job''s deadline (%s) passed.',
                                                             to_char(j.deadline at time zone 'UTC',
                                                                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                                           'code', 'DEADLINE_EXCEEDED')
      from cand c
     where j.id = c.id and c.deadline <= now()
    returning j.id, j.attempt, j.deadline, j.key_scope, j.key_hash, j.key_hold_until
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
  ),
  -- Jobs whose key this claim releases (docs/enqueue.md, "Key lifetimes"): held until the job
  -- starts, or any held key of a job failed at its deadline.
  held as (
    select o.id, 'failed' as reason from overdue o where o.key_hold_until is not null
    union all
    select c.id, 'started' from claimed c where c.key_hold_until = 'started'
  ),
  -- How many jobs this claim failed for their deadline, for the worker's stats (the claiming
  -- statement reads workhorse.claim_overdue in the same transaction).
  overdue_count as (
    select set_config('workhorse.claim_overdue', count(*)::text, true) as n from overdue
  ),
  -- release_held_keys (PL/pgSQL: the planner never opens its body) is called only when there is
  -- such a job, so a claim of jobs without a lifetime never touches key_binding.
  released as (
    select workhorse.release_held_keys(array_agg(h.id), array_agg(h.reason)) as n from held h having count(*) > 0
  )
  select c.id, c.queue::text, c.type::text, c.payload, c.attempt::integer, c.max_attempts::integer, c.run_at,
         c.deadline, c.execution_timeout_ms::bigint, c.concurrency_key, c.tags::text[], c.created_at,
         c.lease_expires_at, c.trace_context
    from claimed c
   -- Filters without a column of c: evaluated once, before the first row, even when none is claimed.
   where (select o.n is not null from overdue_count o) and (select count(*) from released) >= 0
   order by c.run_at, c.id;
end $$;
