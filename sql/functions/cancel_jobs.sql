-- Cancel (docs/operator-actions.md). scheduled/ready jobs become canceled at once (canceled event); active jobs are
-- flagged (cancel_requested event) and their worker stops them at its next heartbeat; anything else
-- is left alone. Bindings are kept, except a key held until its job finishes or starts (released
-- with the job canceled). One operator_audit row.
-- Returns canceled, cancel_requested, and unchanged: {state or 'missing': count} for the rest.
-- Each job is locked in id order (overlapping calls queue instead of deadlocking), on Citus on its
-- shard by the bucket in its id; then the changes run set-based. One node runs the same text.
create or replace function workhorse.cancel_jobs(p_ids uuid[], p_actor text, p_reason text)
returns table (canceled integer, cancel_requested integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  --@citus+ v_bucket integer;
  --@citus+ v_buckets integer[] := '{}';
  v_state text;
  v_attempt integer;
  v_hold text;
  v_now timestamptz := now();
  v_cancel uuid[] := '{}';
  v_held uuid[] := '{}';
  v_request uuid[] := '{}';
  v_attempts integer[] := '{}';
  v_other text[] := '{}';
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    --@citus+ v_bucket := workhorse.id_bucket(v_id);
    --@citus+ v_buckets := v_buckets || v_bucket;
    select j.state, j.attempt, j.key_hold_until into v_state, v_attempt, v_hold
      from workhorse.job j where j.id = v_id for update of j;
      --@citus from workhorse.job j where j.bucket = v_bucket and j.id = v_id for update of j;
    if not found then
      v_other := v_other || 'missing'::text;
    elsif v_state in ('scheduled', 'ready') then
      v_cancel := v_cancel || v_id;
      if v_hold is not null then
        v_held := v_held || v_id;
      end if;
    elsif v_state = 'active' then
      v_request := v_request || v_id;
      v_attempts := v_attempts || v_attempt;
    else
      v_other := v_other || v_state;
    end if;
  end loop;
  -- Every job is locked now: the changes are set-based (on Citus, one statement per shard of the
  -- call's buckets).
  if cardinality(v_cancel) > 0 then
    update workhorse.job j
       set state = 'canceled', finished_at = v_now, updated_at = v_now, cancel_requested_at = v_now,
           cancel_requested_by = p_actor, cancel_reason = p_reason
     where j.id = any (v_cancel);
     --@citus where j.bucket = any (v_buckets) and j.id = any (v_cancel);
  end if;
  if cardinality(v_request) > 0 then
    update workhorse.job j
       set cancel_requested_at = v_now, cancel_requested_by = p_actor, cancel_reason = p_reason, updated_at = v_now
     where j.id = any (v_request);
     --@citus where j.bucket = any (v_buckets) and j.id = any (v_request);
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'canceled', jsonb_build_object('actor', p_actor, 'reason', p_reason) from unnest(v_cancel) u(id)
  union all
  select u.id, 'cancel_requested', jsonb_build_object('actor', p_actor, 'reason', p_reason, 'attempt', u.attempt)
    from unnest(v_request, v_attempts) u(id, attempt);
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- a job without a lifetime never reaches key_binding.
  if cardinality(v_held) > 0 then
    perform workhorse.release_held_keys(v_held, array_fill('canceled'::text, array[cardinality(v_held)]));
  end if;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'cancel',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('requested', cardinality(p_ids), 'canceled', cardinality(v_cancel),
                             'cancelRequested', cardinality(v_request), 'unchanged', v_unchanged));
  return query select cardinality(v_cancel), cardinality(v_request), v_unchanged;
end $$;
