-- Stores a checkpoint of a running attempt with its checkpoint_saved event, and extends the lease
-- (the attempt is evidently alive). status: 'saved'; 'exists' when this (job, name) was saved
-- already (value: the stored one, which wins); 'stale' when the attempt no longer holds the job.
create or replace function workhorse.save_checkpoint(p_id uuid, p_attempt integer, p_owner text, p_name text, p_value jsonb,
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
   --@citus where j.bucket = workhorse.id_bucket(p_id) and j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner and j.state = 'active';
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
