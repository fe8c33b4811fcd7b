-- Claiming on Citus: FOR UPDATE SKIP LOCKED works within one shard, so claim_jobs visits the shards
-- of workhorse.job one at a time (each a router query on `bucket = any(<the shard's buckets>)`),
-- starting from a random shard on every call so claimers spread over the shards and none is
-- starved, and stops once p_limit jobs are claimed. Within a shard: as on one node (oldest run_at
-- first, paused queues skipped, concurrency keys decided by concurrency_slot, overdue jobs fail).
-- concurrency_slot stays a table of the coordinator, where claims run: keys held by active jobs are
-- read into an array and filtered in the shard query; the slot insert decides races as on one node.
-- A job that left 'active' frees its slot here (no trigger on a shard can reach the coordinator):
-- slots whose job is no longer active are deleted before claiming.
create or replace function workhorse.claim_shard(p_buckets integer[], p_queues text[], p_types text[], p_owner text,
                                                 p_limit integer, p_lease_ms integer)
returns setof workhorse.job
language plpgsql as $$
declare
  v_ids uuid[];
  v_keys text[];
  v_deadlines timestamptz[];
  v_run_ats timestamptz[];
  v_now timestamptz := now();
  v_overdue uuid[];
  v_errors jsonb[];
  v_slotted uuid[];
  v_take uuid[];
  v_taken text[] := array(select s.concurrency_key from workhorse.concurrency_slot s);
begin
  select coalesce(array_agg(x.id order by x.run_at, x.id), '{}'), array_agg(x.concurrency_key order by x.run_at, x.id),
         array_agg(x.deadline order by x.run_at, x.id), array_agg(x.run_at order by x.run_at, x.id)
    into v_ids, v_keys, v_deadlines, v_run_ats
    from (select j.id, j.concurrency_key, j.deadline, j.run_at
            from workhorse.job j
           where j.bucket = any (p_buckets)
             and j.queue = any (p_queues)
             and j.state in ('scheduled', 'ready')
             and j.run_at <= v_now
             and (p_types is null or j.type = any (p_types))
             and not exists (select 1 from workhorse.queue_pause p where p.queue = j.queue)
             and (j.concurrency_key is null or not (j.concurrency_key = any (v_taken)))
           order by j.run_at, j.id
           limit p_limit
             for update of j skip locked) x;
  if cardinality(v_ids) = 0 then
    return;
  end if;

  -- The error is built here, not in the UPDATE: Citus runs no STABLE format() on a column there.
  select coalesce(array_agg(u.id), '{}'),
         array_agg(jsonb_build_object('name', 'DeadlineExceededError',
                                      'message', format('The job''s deadline (%s) passed.',
                                                        to_char(u.deadline at time zone 'UTC',
                                                                'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                                      'code', 'DEADLINE_EXCEEDED'))
    into v_overdue, v_errors
    from unnest(v_ids, v_deadlines) as u(id, deadline) where u.deadline <= v_now;
  -- Counted for the worker's stats (claim_jobs resets it; the claiming statement reads it).
  perform set_config('workhorse.claim_overdue',
                     (coalesce(nullif(current_setting('workhorse.claim_overdue', true), '')::integer, 0)
                      + cardinality(v_overdue))::text, true);
  if cardinality(v_overdue) > 0 then
    update workhorse.job j
       set state = 'failed', finished_at = v_now, updated_at = v_now, last_error = e.error
      from unnest(v_overdue, v_errors) as e(id, error)
     where j.bucket = any (p_buckets) and j.id = e.id;
    insert into workhorse.job_event (job_id, kind, data)
    select j.id, e.kind, jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline)
                         || case when e.kind = 'failed' then '{"reason":"deadline_exceeded"}'::jsonb else '{}' end
      from workhorse.job j cross join (values (1, 'deadline_exceeded'), (2, 'failed')) as e(ord, kind)
     where j.bucket = any (p_buckets) and j.id = any (v_overdue)
     order by j.id, e.ord;
    -- A held key is released with its job failed (docs/enqueue.md, "Key lifetimes"): rare, so no filter.
    perform workhorse.release_held_keys(v_overdue, array_fill('failed'::text, array[cardinality(v_overdue)]));
  end if;

  v_slotted := '{}';
  if exists (select 1 from unnest(v_keys) k where k is not null) then
    with ins as (
      insert into workhorse.concurrency_slot (concurrency_key, job_id)
      select k.concurrency_key, k.id
        from (select distinct on (u.key) u.key as concurrency_key, u.id
                from unnest(v_ids, v_keys, v_deadlines, v_run_ats) with ordinality as u(id, key, deadline, run_at, o)
               where u.key is not null and (u.deadline is null or u.deadline > v_now)
               order by u.key, u.o) k
       order by k.concurrency_key
      on conflict do nothing
      returning job_id
    )
    select coalesce(array_agg(ins.job_id), '{}') into v_slotted from ins;
  end if;

  select coalesce(array_agg(u.id), '{}') into v_take
    from unnest(v_ids, v_keys, v_deadlines) as u(id, key, deadline)
   where (u.deadline is null or u.deadline > v_now) and (u.key is null or u.id = any (v_slotted));
  if cardinality(v_take) = 0 then
    return;
  end if;

  return query
  update workhorse.job j
     set state = 'active', attempt = j.attempt + 1, lease_owner = p_owner,
         lease_expires_at = v_now + p_lease_ms * interval '1 millisecond', started_at = v_now, updated_at = v_now
   where j.bucket = any (p_buckets) and j.id = any (v_take)
  returning j.*;
end $$;
