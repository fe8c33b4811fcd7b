-- The Citus variant of sql/functions/complete_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/complete_jobs.sql b84e1d0ed0435b08

-- Attempt outcomes, as on one node but in PL/pgSQL (Citus plans no parameterised statements in SQL
-- functions): the job rows change where they are (each update reaches the shards of its ids' buckets),
-- then the events are written by job id.
create or replace function workhorse.complete_jobs(p_ids uuid[], p_attempts integer[], p_owners text[],
                                                   p_results jsonb[])
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_attempts integer[];
  v_owners text[];
  v_started timestamptz[];
  v_held uuid[];
begin
  with done as (
    update workhorse.job j
       set state = 'succeeded', result = r.result, finished_at = now(), updated_at = now(), lease_expires_at = null
      from unnest(p_ids, p_attempts, p_owners, p_results) as r(id, attempt, owner, result)
     where j.bucket = workhorse.id_bucket(r.id) and j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner
       and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.started_at, j.key_hold_until
  )
  select array_agg(d.id), array_agg(d.attempt), array_agg(d.lease_owner), array_agg(d.started_at),
         array_agg(d.id) filter (where d.key_hold_until is not null)
    into v_ids, v_attempts, v_owners, v_started, v_held
    from done d;
  if v_ids is null then
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'succeeded',
         jsonb_build_object('attempt', u.attempt, 'worker', u.owner,
                            'durationMs', round(extract(epoch from now() - u.started) * 1000))
    from unnest(v_ids, v_attempts, v_owners, v_started) as u(id, attempt, owner, started);
  -- Keys held until these jobs finish (docs/enqueue.md, "Key lifetimes"); none for jobs without one.
  if v_held is not null then
    perform workhorse.release_held_keys(v_held, array_fill('succeeded'::text, array[cardinality(v_held)]));
  end if;
  return query select u.id from unnest(v_ids) as u(id);
end $$;
