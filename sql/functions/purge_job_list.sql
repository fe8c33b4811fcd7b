-- Bulk purge (the console's selection): as workhorse.purge_jobs for each ready/scheduled job, with
-- the rest counted by state ('missing' for unknown ids) and one audit row for the whole call. Every
-- binding a purged job owns is released; a key with a lifetime with a key_released entry on the job's
-- timeline (docs/enqueue.md, "Key lifetimes"). Each job is locked in id order (overlapping calls queue
-- instead of deadlocking), on Citus on its shard by the bucket in its id; then the changes run
-- set-based. One node runs the same text.
create or replace function workhorse.purge_job_list(p_ids uuid[], p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  --@citus+ v_bucket integer;
  --@citus+ v_buckets integer[] := '{}';
  v_state text;
  v_hold text;
  v_now timestamptz := now();
  v_purged uuid[] := '{}';
  v_held uuid[] := '{}';
  v_other text[] := '{}';
  v_released integer;
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    --@citus+ v_bucket := workhorse.id_bucket(v_id);
    --@citus+ v_buckets := v_buckets || v_bucket;
    select j.state, j.key_hold_until into v_state, v_hold
      from workhorse.job j where j.id = v_id for update of j;
      --@citus from workhorse.job j where j.bucket = v_bucket and j.id = v_id for update of j;
    if not found then
      v_other := v_other || 'missing'::text;
    elsif v_state in ('ready', 'scheduled') then
      v_purged := v_purged || v_id;
      if v_hold is not null then
        v_held := v_held || v_id;
      end if;
    else
      v_other := v_other || v_state;
    end if;
  end loop;
  -- Every job is locked now: the changes are set-based (on Citus, one statement per shard of the
  -- call's buckets).
  if cardinality(v_purged) > 0 then
    update workhorse.job j
       set state = 'purged', purged_at = v_now, purged_by = p_actor, purge_reason = p_reason, updated_at = v_now
     where j.id = any (v_purged);
     --@citus where j.bucket = any (v_buckets) and j.id = any (v_purged);
    insert into workhorse.job_event (job_id, kind, data)
    select u.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from unnest(v_purged) u(id);
  end if;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;
  -- Keys with a lifetime first, with their key_released entries; then every other binding they own.
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
