-- The Citus variant of sql/functions/release_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/release_jobs.sql e5b7c45d52a2a018

create or replace function workhorse.release_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_reason text)
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_attempts integer[];
  v_owners text[];
  v_canceled boolean[];
  v_by text[];
  v_reasons text[];
begin
  with before as (
    select j.id, r.attempt, r.owner, j.cancel_requested_at is not null as canceled, j.cancel_requested_by,
           j.cancel_reason
      from workhorse.job j
      join unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
        on j.bucket = workhorse.id_bucket(r.id) and j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner
     where j.state = 'active'
  ),
  rel as (
    update workhorse.job j
       set state = 'ready', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
      from before b
     where j.id = b.id and j.state = 'active'
    returning j.id
  )
  select array_agg(b.id), array_agg(b.attempt), array_agg(b.owner), array_agg(b.canceled),
         array_agg(b.cancel_requested_by), array_agg(b.cancel_reason)
    into v_ids, v_attempts, v_owners, v_canceled, v_by, v_reasons
    from before b where b.id in (select r.id from rel r);
  if v_ids is null then
    return;
  end if;
  -- The shard trigger turned a cancel-requested release into canceled: record it.
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'canceled', jsonb_build_object('attempt', u.attempt, 'actor', u.by, 'reason', u.reason)
    from unnest(v_ids, v_attempts, v_canceled, v_by, v_reasons) as u(id, attempt, canceled, by, reason)
   where u.canceled;
  -- A job canceled here releases a held key (docs/enqueue.md, "Key lifetimes"). Rare, so no filter.
  perform workhorse.release_held_keys(array_agg(u.id), array_agg('canceled'::text))
     from unnest(v_ids, v_canceled) as u(id, canceled)
   where u.canceled
  having count(*) > 0;
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'released', jsonb_build_object('attempt', u.attempt, 'worker', u.owner, 'reason', p_reason)
    from unnest(v_ids, v_attempts, v_owners) as u(id, attempt, owner);
  return query select u.id from unnest(v_ids) as u(id);
end $$;
