-- The worker's side of a cancel: records the attempt as canceled (fenced like every outcome).
create or replace function workhorse.cancel_attempt(p_id uuid, p_attempt integer, p_owner text)
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
