-- The Citus variant of sql/functions/purge_job_list.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/purge_job_list.sql 55d787cf5d0dd5c1

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
