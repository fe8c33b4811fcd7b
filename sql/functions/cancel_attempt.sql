-- The worker's side of a cancel: records the attempt as canceled (fenced like every outcome), and
-- releases a key held until the job finishes (docs/enqueue.md, "Key lifetimes"). Returns the id, or
-- nothing for a stale attempt.
create or replace function workhorse.cancel_attempt(p_id uuid, p_attempt integer, p_owner text)
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v record;
begin
  update workhorse.job j
     set state = 'canceled', finished_at = now(), updated_at = now(), lease_expires_at = null
   where j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner
   --@citus where j.bucket = workhorse.id_bucket(p_id) and j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner
     and j.state = 'active'
  returning j.id, j.attempt, j.lease_owner, j.cancel_requested_by, j.cancel_reason, j.key_hold_until into v;
  if not found then
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  values (v.id, 'canceled', jsonb_build_object('attempt', v.attempt, 'worker', v.lease_owner,
                                               'actor', v.cancel_requested_by, 'reason', v.cancel_reason));
  if v.key_hold_until is not null then
    perform workhorse.release_held_keys(array[v.id], array['canceled']);
  end if;
  return query select v.id;
end $$;
