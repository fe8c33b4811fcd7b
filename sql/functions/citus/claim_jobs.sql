-- The Citus variant of sql/functions/claim_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/claim_jobs.sql 8ecca42f58669a2a

-- Until migration 018 the result had no trace_context column. The argument types did not change,
-- so the old function is dropped only while it still has the old result (as heartbeat_jobs.sql does).
do $$
begin
  if pg_get_function_result(to_regprocedure('workhorse.claim_jobs(text[], text[], text, integer, integer, boolean)'))
     not like '%trace_context%' then
    drop function workhorse.claim_jobs(text[], text[], text, integer, integer, boolean);
  end if;
end $$;

create or replace function workhorse.claim_jobs(p_queues text[], p_types text[], p_owner text, p_limit integer,
                                                p_lease_ms integer, p_reap boolean)
returns table (id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer,
               run_at timestamptz, deadline timestamptz, execution_timeout_ms bigint, concurrency_key text,
               tags text[], created_at timestamptz, lease_expires_at timestamptz, trace_context text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_shards integer[][];
  v_count integer;
  v_start integer;
  v_got integer := 0;
  v_claimed workhorse.job[] := '{}';
  v_part workhorse.job[];
  v_buckets integer[];
  v_slot_jobs uuid[];
  v_active uuid[];
begin
  perform set_config('synchronous_commit', 'off', true);
  -- claim_shard adds the jobs it fails for their deadline (the worker's stats read it).
  perform set_config('workhorse.claim_overdue', '0', true);
  -- One connection per worker for this claim: a multi-shard read (the slot check below) would
  -- otherwise open several, and a later update of a row this claim locked through one of them could
  -- be sent through another and wait on itself (Citus reports that as a distributed deadlock).
  perform set_config('citus.max_adaptive_executor_pool_size', '1', true);
  select array_agg(s.job_id) into v_slot_jobs from workhorse.concurrency_slot s;
  if v_slot_jobs is not null then
    -- concurrency_slot is local to the coordinator: read the jobs, then delete, never one query
    -- joining it with the distributed job table.
    select coalesce(array_agg(j.id), '{}') into v_active
      from workhorse.job j where j.id = any (v_slot_jobs) and j.state = 'active';
    delete from workhorse.concurrency_slot s where s.job_id = any (v_slot_jobs) and not (s.job_id = any (v_active));
  end if;
  if p_reap then
    perform workhorse.reap_expired_leases(p_queues, 100);
  end if;
  select count(*) into v_count from workhorse.shard_bucket;
  v_start := floor(random() * v_count)::integer;
  for i in 0 .. v_count - 1 loop
    select b.buckets into v_buckets
      from workhorse.shard_bucket b order by b.shard_id offset (v_start + i) % v_count limit 1;
    select coalesce(array_agg(c), '{}') into v_part
      from workhorse.claim_shard(v_buckets, p_queues, p_types, p_owner, p_limit - v_got, p_lease_ms) c;
    v_claimed := v_claimed || v_part;
    v_got := v_got + cardinality(v_part);
    exit when v_got >= p_limit;
  end loop;
  if v_got = 0 then
    return;
  end if;

  insert into workhorse.job_event (job_id, kind, data)
  select c.id, 'claimed', jsonb_build_object('attempt', c.attempt, 'worker', p_owner, 'leaseExpiresAt', c.lease_expires_at)
    from unnest(v_claimed) c;
  -- Keys held until their jobs start are released by the claim (docs/enqueue.md, "Key lifetimes").
  if exists (select 1 from unnest(v_claimed) c where c.key_hold_until = 'started') then
    perform workhorse.release_held_keys(array_agg(c.id), array_agg('started'::text))
       from unnest(v_claimed) c where c.key_hold_until = 'started';
  end if;

  return query
  select c.id, c.queue::text, c.type::text, c.payload, c.attempt::integer, c.max_attempts::integer, c.run_at,
         c.deadline, c.execution_timeout_ms::bigint, c.concurrency_key, c.tags::text[], c.created_at,
         c.lease_expires_at, c.trace_context
    from unnest(v_claimed) c
   order by c.run_at, c.id;
end $$;
