-- Run now: scheduled jobs become ready with run_at = now(); a run_now event; one audit row.
create or replace function workhorse.run_jobs_now(p_ids uuid[], p_actor text, p_reason text)
returns table (updated integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_updated integer;
  v_unchanged jsonb;
  v_queues text[];
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  upd as (
    update workhorse.job j set state = 'ready', run_at = now(), updated_at = now()
      from ids where j.id = ids.id and j.state = 'scheduled'
    returning j.id, j.queue
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select u.id, 'run_now', jsonb_build_object('actor', p_actor, 'reason', p_reason) from upd u
  )
  select (select count(*) from upd), (select array_agg(distinct u.queue) from upd u),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(j.state, 'missing') as state, count(*) as n
                    from ids left join workhorse.job j on j.id = ids.id
                   where ids.id not in (select u.id from upd u)
                   group by 1) s)
    into v_updated, v_queues, v_unchanged;
  perform pg_notify('workhorse_jobs', q) from unnest(v_queues) q;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'run_now',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason, jsonb_build_object('requested', cardinality(p_ids), 'updated', v_updated, 'unchanged', v_unchanged));
  return query select v_updated, v_unchanged;
end $$;
