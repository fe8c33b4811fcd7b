-- Gives running attempts back without counting them (worker shutdown after its grace period): state
-- 'ready', attempt - 1, a 'released' event. Fenced; returns the ids released. A later stale answer
-- from the released attempt still cannot match: lease_owner names the next claimer.
create or replace function workhorse.release_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_reason text)
returns table (id uuid)
language sql as $$
  with rel as (
    update workhorse.job j
       set state = 'ready', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
      from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
    returning j.id, r.attempt, r.owner, j.state, j.key_scope, j.key_hash, j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.id, 'released', jsonb_build_object('attempt', r.attempt, 'worker', r.owner, 'reason', p_reason)
      from rel r
  ),
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- for a job without a lifetime (key_hold_until null) the binding is never looked at.
  released as (
    delete from workhorse.key_binding b using rel x
     where x.key_hold_until is not null and x.state = 'canceled' and b.scope = x.key_scope and b.key_hash = x.key_hash
       and b.job_id = x.id
    returning b.job_id, x.key_hold_until, x.state as reason
  ),
  released_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', r.reason)
      from released r
  )
  select r.id from rel r
$$;
