-- Lapsed leases (the worker stopped heartbeating: crashed, partitioned, paused) in the given queues,
-- oldest first, at most p_limit, skipping rows another transaction holds. Each gets a lease_expired
-- event and goes back to 'ready' (run_at unchanged, so it is first in line) for a new attempt, or
-- to 'failed' when that was its last attempt or its deadline has passed.
create or replace function workhorse.reap_expired_leases(p_queues text[], p_limit integer)
returns integer language plpgsql as $$
declare
  v_count integer;
  v_held uuid[];
  v_reasons text[];
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
    returning j.id, j.state, j.attempt, j.deadline, l.lease_owner, l.lease_expires_at, j.key_hold_until
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
  select count(*), array_agg(u.id) filter (where u.key_hold_until is not null and u.state in ('failed', 'canceled')),
         array_agg(u.state::text) filter (where u.key_hold_until is not null and u.state in ('failed', 'canceled'))
    into v_count, v_held, v_reasons
    from upd u;
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- a job without a lifetime never reaches key_binding.
  if v_held is not null then
    perform workhorse.release_held_keys(v_held, v_reasons);
  end if;
  return v_count;
end $$;
