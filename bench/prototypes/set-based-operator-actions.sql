-- The single-node operator actions as they were before they ran job by job (set-based statements),
-- for bench/operator-actions.ts: installed over the current functions, they are the 'set-based' variant.
-- ---------------------------------------------------------------------------------------------

-- Cancel (docs/operator-actions.md). scheduled/ready jobs become canceled at once (canceled event); active jobs are
-- flagged (cancel_requested event) and their worker stops them at its next heartbeat; anything else
-- is left alone. Bindings are kept, except a key held until its job finishes or starts (released
-- with the job canceled). One operator_audit row.
-- Returns canceled, cancel_requested, and unchanged: {state or 'missing': count} for the rest.
create or replace function workhorse.cancel_jobs(p_ids uuid[], p_actor text, p_reason text)
returns table (canceled integer, cancel_requested integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_canceled integer;
  v_requested integer;
  v_unchanged jsonb;
  v_held uuid[];
begin
  with ids as (select distinct u.id from unnest(p_ids) u(id)),
  locked as (
    select j.id, j.state from workhorse.job j join ids on ids.id = j.id order by j.id for update of j
  ),
  now_canceled as (
    update workhorse.job j
       set state = 'canceled', finished_at = now(), updated_at = now(), cancel_requested_at = now(),
           cancel_requested_by = p_actor, cancel_reason = p_reason
      from locked l
     where j.id = l.id and l.state in ('scheduled', 'ready')
    returning j.id, j.key_hold_until
  ),
  requested as (
    update workhorse.job j
       set cancel_requested_at = now(), cancel_requested_by = p_actor, cancel_reason = p_reason, updated_at = now()
      from locked l
     where j.id = l.id and l.state = 'active'
    returning j.id, j.attempt
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select c.id, 'canceled', jsonb_build_object('actor', p_actor, 'reason', p_reason) from now_canceled c
    union all
    select r.id, 'cancel_requested', jsonb_build_object('actor', p_actor, 'reason', p_reason, 'attempt', r.attempt)
      from requested r
  )
  select (select count(*) from now_canceled), (select count(*) from requested),
         (select array_agg(c.id) from now_canceled c where c.key_hold_until is not null),
         (select coalesce(jsonb_object_agg(s.state, s.n), '{}')
            from (select coalesce(l.state, 'missing') as state, count(*) as n
                    from ids left join locked l on l.id = ids.id
                   where l.state is null or l.state not in ('scheduled', 'ready', 'active')
                   group by 1) s)
    into v_canceled, v_requested, v_held, v_unchanged;
  -- A held key (docs/enqueue.md, "Key lifetimes") is released in the transaction that ends its job;
  -- a job without a lifetime never reaches key_binding.
  if v_held is not null then
    perform workhorse.release_held_keys(v_held, array_fill('canceled'::text, array[cardinality(v_held)]));
  end if;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'cancel',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('requested', cardinality(p_ids), 'canceled', v_canceled,
                             'cancelRequested', v_requested, 'unchanged', v_unchanged));
  return query select v_canceled, v_requested, v_unchanged;
end $$;
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
