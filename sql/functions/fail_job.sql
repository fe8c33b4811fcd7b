-- A failed attempt whose job an operator asked to cancel (before its worker saw the request) was
-- reported as a scheduled retry: fail_job returned the state it computed ('ready'/'scheduled')
-- while the cancel trigger stored 'canceled', and it wrote a 'retry_scheduled' event after the
-- trigger's 'canceled' one. fail_job now returns the state the row holds, 'canceled', with no
-- retry event; the worker reports the attempt canceled (docs/worker.md, lifecycle).
-- On Citus the job's bucket (from its id) is in every statement on workhorse.job, so each reaches one
-- shard, and events carry the coordinator's now() explicitly (a worker that joins the transaction
-- later has a later now() of its own).
create or replace function workhorse.fail_job(p_id uuid, p_attempt integer, p_owner text, p_error jsonb, p_cause text,
                                   p_default_policy jsonb)
returns table (state text, run_at timestamptz, delay_ms bigint)
language plpgsql as $$
#variable_conflict use_column
declare
  j record;
  v_delay bigint;
  v_next timestamptz;
  v_state text;
  v_reason text;
  v_actual text;
  --@citus+ v_bucket integer := workhorse.id_bucket(p_id);
  --@citus+ v_now timestamptz := now();
begin
  select x.id, x.attempt, x.max_attempts, x.deadline, x.retry_policy, x.key_scope, x.key_hash, x.key_hold_until
  --@citus select x.id, x.attempt, x.max_attempts, x.deadline, x.retry_policy, x.key_hold_until
    into j
    from workhorse.job x
   where x.id = p_id and x.attempt = p_attempt and x.lease_owner = p_owner and x.state = 'active'
   --@citus where x.bucket = v_bucket and x.id = p_id and x.attempt = p_attempt and x.lease_owner = p_owner and x.state = 'active'
     for update;
  if not found then
    return;
  end if;

  v_delay := workhorse.retry_delay_ms(coalesce(j.retry_policy, p_default_policy), j.attempt);
  v_next := now() + v_delay * interval '1 millisecond';
  if p_cause = 'deadline_exceeded' or j.deadline <= now() or j.deadline <= v_next then
    v_state := 'failed';
    v_reason := 'deadline_exceeded';
  elsif j.attempt >= j.max_attempts then
    v_state := 'failed';
    v_reason := 'max_attempts';
  else
    v_state := case when v_delay > 0 then 'scheduled' else 'ready' end;
  end if;

  update workhorse.job x
     set state = v_state,
         run_at = case when v_state = 'failed' then x.run_at else v_next end,
         finished_at = case when v_state = 'failed' then now() end,
         --@citus finished_at = case when v_state = 'failed' then v_now end, -- Citus: no now() inside CASE
         lease_expires_at = null,
         last_error = p_error,
         updated_at = now()
   where x.id = p_id
   --@citus where x.bucket = v_bucket and x.id = p_id
  returning x.state into v_actual;

  -- An operator asked to cancel this job before its worker saw it: the would-be retry became
  -- 'canceled' (trigger job_cancel_instead_of_retry, which wrote the 'canceled' event). Say so, and
  -- write no 'retry_scheduled' event for a retry that will not happen.
  -- A held key (docs/enqueue.md, "Key lifetimes") is released with its job dead-lettered or canceled;
  -- an attempt that will be retried keeps it.
  if j.key_hold_until is not null and v_actual in ('failed', 'canceled') then
    perform workhorse.release_held_keys(array[p_id], array[v_actual]);
  end if;

  if v_actual = 'canceled' then
    --@citus+ -- The shard trigger cannot write the event (job_event lives elsewhere): written here.
    --@citus+ insert into workhorse.job_event (job_id, at, kind, data)
    --@citus+ select p_id, v_now, 'canceled', jsonb_build_object('attempt', x.attempt, 'actor', x.cancel_requested_by,
    --@citus+                                                    'reason', x.cancel_reason)
    --@citus+   from workhorse.job x where x.bucket = v_bucket and x.id = p_id;
    return query select v_actual, null::timestamptz, null::bigint;
    return;
  end if;

  if p_cause = 'execution_timed_out' then
    insert into workhorse.job_event (job_id, kind, data)
    --@citus insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, 'execution_timed_out', jsonb_build_object('attempt', j.attempt, 'worker', p_owner));
    --@citus values (p_id, v_now, 'execution_timed_out', jsonb_build_object('attempt', j.attempt, 'worker', p_owner));
  end if;
  if v_reason = 'deadline_exceeded' then
    insert into workhorse.job_event (job_id, kind, data)
    --@citus insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, 'deadline_exceeded', jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline));
    --@citus values (p_id, v_now, 'deadline_exceeded', jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline));
  end if;
  if v_state = 'failed' then
    insert into workhorse.job_event (job_id, kind, data)
    --@citus insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, 'failed', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'reason', v_reason,
    --@citus values (p_id, v_now, 'failed', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'reason', v_reason,
                                               'cause', p_cause, 'error', p_error));
    return query select v_state, null::timestamptz, null::bigint;
  else
    insert into workhorse.job_event (job_id, kind, data)
    --@citus insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, 'retry_scheduled', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'cause', p_cause,
    --@citus values (p_id, v_now, 'retry_scheduled', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'cause', p_cause,
                                                        'runAt', v_next, 'delayMs', v_delay, 'error', p_error));
    return query select v_state, v_next, v_delay;
  end if;
end $$;
