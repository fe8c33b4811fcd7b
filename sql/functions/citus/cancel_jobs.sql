-- The Citus variant of sql/functions/cancel_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/cancel_jobs.sql 69fc0dc106f6c656

-- Cancel (operator), job by job in id order: each job is locked on its shard (the bucket in its id),
-- a pending one is canceled, an active one asked to stop (its worker sees it at the next heartbeat);
-- any other state is counted as unchanged. One audit row, as on one node.
create or replace function workhorse.cancel_jobs(p_ids uuid[], p_actor text, p_reason text)
returns table (canceled integer, cancel_requested integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_bucket integer;
  v_state text;
  v_attempt integer;
  v_hold text;
  v_now timestamptz := now();
  v_canceled integer := 0;
  v_requested integer := 0;
  v_other text[] := '{}';
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    v_bucket := workhorse.id_bucket(v_id);
    select j.state, j.attempt, j.key_hold_until into v_state, v_attempt, v_hold
      from workhorse.job j where j.bucket = v_bucket and j.id = v_id for update of j;
    if not found then
      v_other := v_other || 'missing'::text;
    elsif v_state in ('scheduled', 'ready') then
      update workhorse.job j
         set state = 'canceled', finished_at = v_now, updated_at = v_now, cancel_requested_at = v_now,
             cancel_requested_by = p_actor, cancel_reason = p_reason
       where j.bucket = v_bucket and j.id = v_id;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'canceled', jsonb_build_object('actor', p_actor, 'reason', p_reason));
      if v_hold is not null then
        perform workhorse.release_held_keys(array[v_id], array['canceled']);
      end if;
      v_canceled := v_canceled + 1;
    elsif v_state = 'active' then
      update workhorse.job j
         set cancel_requested_at = v_now, cancel_requested_by = p_actor, cancel_reason = p_reason, updated_at = v_now
       where j.bucket = v_bucket and j.id = v_id;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'cancel_requested',
              jsonb_build_object('actor', p_actor, 'reason', p_reason, 'attempt', v_attempt));
      v_requested := v_requested + 1;
    else
      v_other := v_other || v_state;
    end if;
  end loop;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'cancel',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('requested', cardinality(p_ids), 'canceled', v_canceled,
                             'cancelRequested', v_requested, 'unchanged', v_unchanged));
  return query select v_canceled, v_requested, v_unchanged;
end $$;
