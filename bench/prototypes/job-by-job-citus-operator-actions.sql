-- The Citus operator actions as they were before the single node and Citus shared one text: each job
-- changed by its own statements on its shard. For bench/operator-actions.ts --citus ('before' variant).
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
-- Clearing dead letters, job by job on each job's shard (its bucket is in its id): a failed job is
-- locked, kept when it owns a live key (unless p_release_keys), else deleted with its events,
-- checkpoints and redrive requests. One audit row.
create or replace function workhorse.delete_failed_jobs(p_ids uuid[], p_actor text, p_reason text,
                                                        p_release_keys boolean)
returns table (deleted integer, released_bindings integer, owning_live_key uuid[], unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_bucket integer;
  v_state text;
  v_doomed uuid[] := '{}';
  v_keyed uuid[] := '{}';
  v_other text[] := '{}';
  v_released integer := 0;
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    v_bucket := workhorse.id_bucket(v_id);
    select j.state into v_state from workhorse.job j where j.bucket = v_bucket and j.id = v_id for update;
    if v_state is distinct from 'failed' then
      v_other := v_other || coalesce(v_state, 'missing');
      continue;
    end if;
    if workhorse.job_owns_live_key(v_id) then
      if not p_release_keys then
        v_keyed := v_keyed || v_id;
        continue;
      end if;
      v_released := v_released + workhorse.release_keys(array[v_id]);
    end if;
    delete from workhorse.job_event e where e.job_id = v_id;
    delete from workhorse.job_checkpoint c where c.job_id = v_id;
    delete from workhorse.redrive_request q where q.source_job_id = v_id;
    delete from workhorse.job j where j.bucket = v_bucket and j.id = v_id;
    v_doomed := v_doomed || v_id;
  end loop;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'delete_failed_jobs',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'deleted', cardinality(v_doomed),
                             'releasedBindings', v_released, 'keptOwningLiveKey', cardinality(v_keyed),
                             'releaseKeys', p_release_keys, 'unchanged', v_unchanged));
  return query select cardinality(v_doomed), v_released, v_keyed, v_unchanged;
end $$;
create or replace function workhorse.purge_job_list(p_ids uuid[], p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_bucket integer;
  v_state text;
  v_now timestamptz := now();
  v_purged uuid[] := '{}';
  v_other text[] := '{}';
  v_released integer;
  v_hold text;
  v_held uuid[] := '{}';
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    v_bucket := workhorse.id_bucket(v_id);
    update workhorse.job j
       set state = 'purged', purged_at = v_now, purged_by = p_actor, purge_reason = p_reason, updated_at = v_now
     where j.bucket = v_bucket and j.id = v_id and j.state in ('ready', 'scheduled')
    returning j.key_hold_until into v_hold;
    if found then
      v_purged := v_purged || v_id;
      if v_hold is not null then
        v_held := v_held || v_id;
      end if;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason));
    else
      select j.state into v_state from workhorse.job j where j.bucket = v_bucket and j.id = v_id;
      v_other := v_other || coalesce(v_state, 'missing');
    end if;
  end loop;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;
  -- Keys with a lifetime first, with their key_released entries (docs/enqueue.md, "Key lifetimes").
  v_released := workhorse.release_held_keys(v_held, array_fill('purged'::text, array[cardinality(v_held)]))
                + workhorse.release_keys(v_purged);
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'purge_job',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'purged', cardinality(v_purged),
                             'releasedBindings', v_released, 'unchanged', v_unchanged));
  return query select cardinality(v_purged), v_released, v_unchanged;
end $$;
