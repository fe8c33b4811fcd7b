-- Records successful attempts: state 'succeeded', result stored, a 'succeeded' event. Fenced; returns
-- the ids that were recorded (a stale attempt's id is simply absent).
create or replace function workhorse.complete_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_results jsonb[])
returns table (id uuid)
language sql as $$
  with done as (
    update workhorse.job j
       set state = 'succeeded', result = r.result, finished_at = now(), updated_at = now(), lease_expires_at = null
      from unnest(p_ids, p_attempts, p_owners, p_results) as r(id, attempt, owner, result)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.started_at, j.key_scope, j.key_hash, j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select d.id, 'succeeded',
           jsonb_build_object('attempt', d.attempt, 'worker', d.lease_owner,
                              'durationMs', round(extract(epoch from now() - d.started_at) * 1000))
      from done d
  ),
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- for a job without a lifetime (key_hold_until null) the binding is never looked at.
  released as (
    delete from workhorse.key_binding b using done x
     where x.key_hold_until is not null and b.scope = x.key_scope and b.key_hash = x.key_hash and b.job_id = x.id
    returning b.job_id, x.key_hold_until, 'succeeded' as reason
  ),
  released_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', r.reason)
      from released r
  )
  select d.id from done d
$$;
