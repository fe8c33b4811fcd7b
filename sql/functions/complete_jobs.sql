-- Records successful attempts: state 'succeeded', result stored, a 'succeeded' event. Fenced; returns
-- the ids that were recorded (a stale attempt's id is simply absent). PL/pgSQL, so the release of held
-- keys runs only when one of the jobs has a lifetime.
create or replace function workhorse.complete_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_results jsonb[])
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_held uuid[];
begin
  with done as (
    update workhorse.job j
       set state = 'succeeded', result = r.result, finished_at = now(), updated_at = now(), lease_expires_at = null
      from unnest(p_ids, p_attempts, p_owners, p_results) as r(id, attempt, owner, result)
     where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
     --@citus where j.bucket = workhorse.id_bucket(r.id) and j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner
     --@citus+   and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.started_at, j.key_hold_until
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select d.id, 'succeeded',
           jsonb_build_object('attempt', d.attempt, 'worker', d.lease_owner,
                              'durationMs', round(extract(epoch from now() - d.started_at) * 1000))
      from done d
  )
  select array_agg(d.id), array_agg(d.id) filter (where d.key_hold_until is not null)
    into v_ids, v_held
    from done d;
  -- Keys held until these jobs finish (docs/enqueue.md, "Key lifetimes"), in this transaction; a job
  -- without a lifetime never reaches key_binding.
  if v_held is not null then
    perform workhorse.release_held_keys(v_held, array_fill('succeeded'::text, array[cardinality(v_held)]));
  end if;
  return query select u.id from unnest(v_ids) as u(id);
end $$;
