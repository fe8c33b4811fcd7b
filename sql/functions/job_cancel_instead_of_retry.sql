-- An active job an operator asked to cancel never goes back to the queue: if its attempt ends by any
-- path that would make it pending again (a thrown error with attempts left, a lapsed lease, a
-- shutdown release) before its worker saw the request, it becomes canceled instead.
create or replace function workhorse.job_cancel_instead_of_retry() returns trigger language plpgsql as $$
begin
  new.state := 'canceled';
  new.finished_at := now();
  new.lease_owner := null;
  new.lease_expires_at := null;
  insert into workhorse.job_event (job_id, kind, data)
  values (new.id, 'canceled', jsonb_build_object('attempt', old.attempt, 'actor', old.cancel_requested_by,
                                                 'reason', old.cancel_reason));
  return new;
end $$;
