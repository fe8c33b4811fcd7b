-- Clearing dead letters (operator): deletes the given jobs that are `failed`, with their events and
-- redrive requests (checkpoints go with the job through its delete trigger), and one audit row for
-- the call. A failed job that still owns a live key binding is kept and returned in owning_live_key
-- (a replay of its request would find no job), unless p_release_keys: then its bindings are released
-- first (they are counted) and it is deleted too. Other ids are counted by state ('missing' for
-- unknown ones). Jobs being changed by another transaction wait (FOR UPDATE, in id order).
create or replace function workhorse.delete_failed_jobs(p_ids uuid[], p_actor text, p_reason text,
                                                        p_release_keys boolean)
returns table (deleted integer, released_bindings integer, owning_live_key uuid[], unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_failed uuid[];
  v_keyed uuid[];
  v_doomed uuid[];
  v_released integer := 0;
  v_unchanged jsonb;
begin
  select coalesce(array_agg(j.id order by j.id), '{}') into v_failed
    from (select j.id from workhorse.job j
           where j.id = any (p_ids) and j.state = 'failed'
           order by j.id
             for update of j) j;
  select coalesce(array_agg(f.id order by f.id), '{}') into v_keyed
    from unnest(v_failed) f(id) where workhorse.job_owns_live_key(f.id);
  if p_release_keys then
    v_released := workhorse.release_keys(v_keyed);
    v_doomed := v_failed;
    v_keyed := '{}';
  else
    select coalesce(array_agg(f.id), '{}') into v_doomed from unnest(v_failed) f(id) where f.id <> all (v_keyed);
  end if;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select coalesce(j.state, 'missing') as state, count(*) as n
            from (select distinct u.id from unnest(p_ids) u(id)) ids
            left join workhorse.job j on j.id = ids.id
           where ids.id <> all (v_failed)
           group by 1) s;
  delete from workhorse.job_event e where e.job_id = any (v_doomed);
  delete from workhorse.redrive_request q where q.source_job_id = any (v_doomed);
  delete from workhorse.job j where j.id = any (v_doomed);
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'delete_failed_jobs',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'deleted', cardinality(v_doomed),
                             'releasedBindings', v_released, 'keptOwningLiveKey', cardinality(v_keyed),
                             'releaseKeys', p_release_keys, 'unchanged', v_unchanged));
  return query select cardinality(v_doomed), v_released, v_keyed, v_unchanged;
end $$;
