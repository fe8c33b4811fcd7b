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
