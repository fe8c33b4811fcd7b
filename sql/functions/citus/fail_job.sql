-- The Citus variant of sql/functions/fail_job.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/fail_job.sql 5a338e08a409621e

-- A failed attempt and a checkpoint: the single-node functions (fail_job as of migration 012) with
-- the job's bucket (from its id) in every statement on workhorse.job, so they reach one shard.
-- Events carry the coordinator's now() explicitly: a worker that joins the transaction later has a
-- later now() of its own. A retry the shard trigger turned into a cancel (an operator asked) gets
-- its `canceled` event here.
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
  v_bucket integer := workhorse.id_bucket(p_id);
  v_now timestamptz := now();
begin
  select x.id, x.attempt, x.max_attempts, x.deadline, x.retry_policy, x.key_hold_until
    into j
    from workhorse.job x
   where x.bucket = v_bucket and x.id = p_id and x.attempt = p_attempt and x.lease_owner = p_owner and x.state = 'active'
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
         finished_at = case when v_state = 'failed' then v_now end, -- Citus: no now() inside CASE
         lease_expires_at = null,
         last_error = p_error,
         updated_at = now()
   where x.bucket = v_bucket and x.id = p_id
  returning x.state into v_actual;

  -- A held key (docs/enqueue.md, "Key lifetimes") is released with its job dead-lettered or canceled;
  -- an attempt that will be retried keeps it.
  if j.key_hold_until is not null and v_actual in ('failed', 'canceled') then
    perform workhorse.release_held_keys(array[p_id], array[v_actual]);
  end if;

  -- An operator asked to cancel this job before its worker saw it: the would-be retry became
  -- 'canceled' (trigger job_cancel_instead_of_retry, which wrote the 'canceled' event). Say so, and
  -- write no 'retry_scheduled' event for a retry that will not happen.
  if v_actual = 'canceled' then
    -- The shard trigger cannot write the event (job_event lives elsewhere): written here.
    insert into workhorse.job_event (job_id, at, kind, data)
    select p_id, v_now, 'canceled', jsonb_build_object('attempt', x.attempt, 'actor', x.cancel_requested_by,
                                                       'reason', x.cancel_reason)
      from workhorse.job x where x.bucket = v_bucket and x.id = p_id;
    return query select v_actual, null::timestamptz, null::bigint;
    return;
  end if;

  if p_cause = 'execution_timed_out' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'execution_timed_out', jsonb_build_object('attempt', j.attempt, 'worker', p_owner));
  end if;
  if v_reason = 'deadline_exceeded' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'deadline_exceeded', jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline));
  end if;
  if v_state = 'failed' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'failed', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'reason', v_reason,
                                               'cause', p_cause, 'error', p_error));
    return query select v_state, null::timestamptz, null::bigint;
  else
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'retry_scheduled', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'cause', p_cause,
                                                        'runAt', v_next, 'delayMs', v_delay, 'error', p_error));
    return query select v_state, v_next, v_delay;
  end if;
end $$;
