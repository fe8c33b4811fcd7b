-- Bulk purge (the console's selection): as workhorse.purge_jobs for each ready/scheduled job, with
-- the rest counted by state ('missing' for unknown ids) and one audit row for the whole call.
create or replace function workhorse.purge_job_list(p_ids uuid[], p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_purged uuid[];
  v_released integer;
  v_unchanged jsonb;
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  p as (
    update workhorse.job j
       set state = 'purged', purged_at = now(), purged_by = p_actor, purge_reason = p_reason, updated_at = now()
      from ids
     where j.id = ids.id and j.state in ('ready', 'scheduled')
    returning j.id
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select p.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from p
  )
  select coalesce((select array_agg(p.id) from p), '{}'),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(j.state, 'missing') as state, count(*) as n
                    from ids left join workhorse.job j on j.id = ids.id
                   where ids.id not in (select p.id from p)
                   group by 1) s)
    into v_purged, v_unchanged;
  -- The bindings the purged jobs own (release_keys, with a key_released entry on the timeline of a
  -- job whose key had a lifetime: docs/enqueue.md, "Key lifetimes").
  with released as (
    delete from workhorse.key_binding b
     using workhorse.job j
     where j.id = any (v_purged) and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
    returning b.job_id, j.key_hold_until
  ),
  released_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', 'purged')
      from released r where r.key_hold_until is not null
  )
  select count(*) into v_released from released;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'purge_job',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'purged', cardinality(v_purged),
                             'releasedBindings', v_released, 'unchanged', v_unchanged));
  return query select cardinality(v_purged), v_released, v_unchanged;
end $$;
