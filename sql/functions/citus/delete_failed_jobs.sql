-- The Citus variant of sql/functions/delete_failed_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/delete_failed_jobs.sql f72ca5582b4e1d50

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
