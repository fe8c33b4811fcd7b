-- Clearing dead letters (operator): deletes the given jobs that are `failed`, with their events,
-- checkpoints and redrive requests, and one audit row for the call. A failed job that still owns a
-- live key binding is kept and returned in owning_live_key (a replay of its request would find no
-- job), unless p_release_keys: then its bindings are released first (they are counted) and it is
-- deleted too. Other ids are counted by state ('missing' for unknown ones). Each failed job is
-- locked in id order (FOR UPDATE: one being changed by another transaction waits), on Citus on its
-- shard by the bucket in its id; then the deletes run set-based. One node runs the same text.
create or replace function workhorse.delete_failed_jobs(p_ids uuid[], p_actor text, p_reason text,
                                                        p_release_keys boolean)
returns table (deleted integer, released_bindings integer, owning_live_key uuid[], unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  --@citus+ v_bucket integer;
  --@citus+ v_buckets integer[] := '{}';
  v_state text;
  v_failed uuid[] := '{}';
  v_keyed uuid[];
  v_doomed uuid[];
  v_other text[] := '{}';
  v_released integer := 0;
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    --@citus+ v_bucket := workhorse.id_bucket(v_id);
    --@citus+ v_buckets := v_buckets || v_bucket;
    perform 1 from workhorse.job j where j.id = v_id and j.state = 'failed' for update;
    --@citus perform 1 from workhorse.job j where j.bucket = v_bucket and j.id = v_id and j.state = 'failed' for update;
    if found then
      v_failed := v_failed || v_id;
    else
      select j.state into v_state from workhorse.job j where j.id = v_id;
      --@citus select j.state into v_state from workhorse.job j where j.bucket = v_bucket and j.id = v_id;
      v_other := v_other || coalesce(v_state, 'missing');
    end if;
  end loop;
  -- Every failed job is locked now: the rest is set-based (on Citus, one statement per shard of the
  -- call's buckets).
  select coalesce(array_agg(f.id order by f.id), '{}') into v_keyed
    from unnest(v_failed) f(id) where workhorse.job_owns_live_key(f.id);
  if p_release_keys then
    v_released := workhorse.release_keys(v_keyed);
    v_doomed := v_failed;
    v_keyed := '{}';
  else
    select coalesce(array_agg(f.id), '{}') into v_doomed from unnest(v_failed) f(id) where f.id <> all (v_keyed);
  end if;
  if cardinality(v_doomed) > 0 then
    delete from workhorse.job_event e where e.job_id = any (v_doomed);
    -- Checkpoints go with the job through its delete trigger (job_deleted_worker_rows), which a
    -- shard of the distributed layout does not run: there they are deleted here.
    --@citus+ delete from workhorse.job_checkpoint c where c.job_id = any (v_doomed);
    delete from workhorse.redrive_request q where q.source_job_id = any (v_doomed);
    delete from workhorse.job j where j.id = any (v_doomed);
    --@citus delete from workhorse.job j where j.bucket = any (v_buckets) and j.id = any (v_doomed);
  end if;
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
