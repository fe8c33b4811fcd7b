-- The worker's side of a cancel: records the attempt as canceled (fenced like every outcome).
create or replace function workhorse.cancel_attempt(p_id uuid, p_attempt integer, p_owner text)
returns table (id uuid)
language sql as $$
  with done as (
    update workhorse.job j
       set state = 'canceled', finished_at = now(), updated_at = now(), lease_expires_at = null
     where j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.cancel_requested_by, j.cancel_reason, j.key_scope, j.key_hash,
              j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select d.id, 'canceled', jsonb_build_object('attempt', d.attempt, 'worker', d.lease_owner,
                                                'actor', d.cancel_requested_by, 'reason', d.cancel_reason)
      from done d
  ),
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- for a job without a lifetime (key_hold_until null) the binding is never looked at.
  released as (
    delete from workhorse.key_binding b using done x
     where x.key_hold_until is not null and b.scope = x.key_scope and b.key_hash = x.key_hash and b.job_id = x.id
    returning b.job_id, x.key_hold_until, 'canceled' as reason
  ),
  released_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', r.reason)
      from released r
  )
  select d.id from done d
$$;
