-- Purge (see 001): the bindings released are those the purged jobs own, found through their keys.
create or replace function workhorse.purge_jobs(p_job_ids uuid[], p_queue text, p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, refused_state text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_purged uuid[];
  v_released integer;
  v_refused text;
begin
  with p as (
    update workhorse.job j
       set state = 'purged', purged_at = now(), purged_by = p_actor, purge_reason = p_reason, updated_at = now()
     where j.state in ('ready', 'scheduled')
       and (case when p_job_ids is null then j.queue = p_queue else j.id = any (p_job_ids) end)
    returning j.id, j.key_scope, j.key_hash, j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select p.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from p
  ),
  released as (
    delete from workhorse.key_binding b using p
     where b.scope = p.key_scope and b.key_hash = p.key_hash and b.job_id = p.id
    returning b.job_id, p.key_hold_until
  ),
  -- A held key (docs/enqueue.md, "Key lifetimes") says on its job's timeline that purge released it.
  released_ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', 'purged')
      from released r where r.key_hold_until is not null
  )
  select coalesce(array_agg(p.id), '{}'), (select count(*) from released) into v_purged, v_released from p;

  if p_job_ids is not null and cardinality(p_job_ids) = 1 and cardinality(v_purged) = 0 then
    select coalesce((select j.state from workhorse.job j where j.id = p_job_ids[1]), 'missing') into v_refused;
  end if;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor,
          case when p_job_ids is null then 'purge_queue' else 'purge_job' end,
          case when p_job_ids is null then 'queue:' || p_queue else 'job:' || array_to_string(p_job_ids, ',') end,
          p_reason,
          case when v_refused is null
               then jsonb_build_object('status', 'ok', 'purged', cardinality(v_purged), 'releasedBindings', v_released)
               else jsonb_build_object('status', 'refused', 'state', v_refused) end);

  return query select cardinality(v_purged), v_released, v_refused;
end $$;
