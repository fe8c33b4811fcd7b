-- Gives running attempts back without counting them (worker shutdown after its grace period): state
-- 'ready', attempt - 1, a 'released' event. Fenced; returns the ids released. A later stale answer
-- from the released attempt still cannot match: lease_owner names the next claimer.
create or replace function workhorse.release_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_reason text)
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_held uuid[];
begin
  with rel as (
    update workhorse.job j
       set state = 'ready', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
      from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
    returning j.id, r.attempt, r.owner, j.state, j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.id, 'released', jsonb_build_object('attempt', r.attempt, 'worker', r.owner, 'reason', p_reason)
      from rel r
  )
  select array_agg(r.id), array_agg(r.id) filter (where r.key_hold_until is not null and r.state = 'canceled')
    into v_ids, v_held
    from rel r;
  -- A release the trigger job_cancel_instead_of_retry turned into a cancel ends the job: a held key
  -- (docs/enqueue.md, "Key lifetimes") is released with it.
  if v_held is not null then
    perform workhorse.release_held_keys(v_held, array_fill('canceled'::text, array[cardinality(v_held)]));
  end if;
  return query select u.id from unnest(v_ids) as u(id);
end $$;
