-- The distributed layout's functions (Citus), applied by migrate({ distributed: true }) after
-- layout.sql and again after every numbered migration, since those may redefine a function by name.

-- The decision for one request on the shard of its bucket (p_bucket = the key's bucket, or the
-- unkeyed job id's). Delegated to the node that holds the shard: called outside a transaction block,
-- the coordinator forwards the call whole, and every statement inside is a local read or write of
-- that one shard. Same body as workhorse.enqueue_one, with the bucket in every key and insert;
-- p_ordinal names the request in a conflict (batches call this once per request).
create function workhorse.enqueue_one_at(
  p_bucket integer, p_ordinal integer, p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests bytea, p_notify boolean,
  out job_id uuid, out outcome text, out request_digest text)
language plpgsql as $$
#variable_conflict use_variable
declare
  v_payload jsonb := coalesce(p_payload, 'null'::jsonb);
  v_run_at timestamptz := coalesce(p_run_at, now());
  v_digests bytea;
  v_rdigest bytea;
  v_live record;
  v_bound boolean := false;
  v_now timestamptz := now();
begin
  if p_key_hash is not null then
    v_digests := substring(p_field_digests from 1 for 32)
                 || substring(sha256(convert_to(v_payload::text, 'UTF8')) from 1 for 8)
                 || substring(p_field_digests from 33);
    v_rdigest := sha256(v_digests);
    for attempt in 1 .. 5 loop
      select b.job_id, b.mode, b.field_digests, b.request_digest into v_live
        from workhorse.key_binding b
       where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash and b.expires_at > now();
      if found then
        if v_live.request_digest = v_rdigest and v_live.mode = p_mode then
          job_id := v_live.job_id;
          outcome := 'replayed';
          request_digest := encode(v_rdigest, 'hex');
          return;
        end if;
        perform workhorse.raise_key_conflict(
          p_ordinal, v_live.job_id, v_live.mode, v_live.field_digests, v_live.request_digest, p_mode, v_digests,
          v_rdigest, (select j.payload from workhorse.job j where j.bucket = p_bucket and j.id = v_live.job_id), v_payload);
      end if;
      insert into workhorse.key_binding as b
        (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      values (p_bucket, p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, v_digests, v_rdigest, p_ttl_ms,
              now(), now() + p_ttl_ms * interval '1 millisecond')
      on conflict (bucket, scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= v_now; -- ON CONFLICT .. WHERE on a distributed table takes no now()
      v_bound := found;
      exit when v_bound;
      -- Another transaction bound the key after our snapshot. ON CONFLICT waited for it and holds the
      -- row lock now; the next pass reads it with a fresh snapshot (READ COMMITTED).
    end loop;
    if not v_bound then
      raise exception using errcode = '40001',
        message = 'workhorse: the idempotency binding kept changing under this enqueue; retry it';
    end if;
  end if;

  insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at)
  values (p_bucket, p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
          p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags,
          p_scope, p_key_hash, p_mode, p_key_preview, p_key_length, p_ttl_ms, v_rdigest, p_run_at);
  if p_notify then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  job_id := p_id;
  outcome := 'accepted';
end $$;
select create_distributed_function(
  'workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean)',
  'p_bucket', colocate_with => 'workhorse.job');

-- A batch on the coordinator, one transaction (two-phase commit across the workers it touched, so a
-- conflict anywhere leaves nothing anywhere): the requests go shard by shard, each decided by
-- enqueue_one_at on its shard, in input order within a shard, so a key repeated in the batch sees
-- its first request's binding (the later ones replay it or conflict with it, as on one node).
-- Same signature and results as the single-node function; p_legacy_key_hashes is ignored (the
-- distributed layout starts empty, so no binding predates the keyed hashes).
create or replace function workhorse.enqueue_batch(
  p_ids uuid[], p_queues text[], p_types text[], p_payloads jsonb, p_run_ats timestamptz[],
  p_max_attempts integer[], p_retry_policies jsonb[], p_deadlines timestamptz[], p_execution_timeouts bigint[],
  p_concurrency_keys text[], p_tags text[], p_tag_counts integer[], p_modes text[], p_scopes text[],
  p_key_hashes bytea[], p_key_previews text[], p_key_lengths integer[], p_ttls bigint[], p_field_digests bytea[],
  p_legacy_key_hashes bytea[], p_notify boolean)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  d record;
  v_ord integer[] := '{}';
  v_job uuid[] := '{}';
  v_out text[] := '{}';
  v_dig text[] := '{}';
  v_queues text[] := '{}';
begin
  for r in
    select u.*, (sum(u.tag_count) over (order by u.o) - u.tag_count)::integer as tag_off,
           workhorse.id_bucket(u.id) as bucket
      from unnest(p_ids, p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                  p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_modes, p_scopes, p_key_hashes,
                  p_key_previews, p_key_lengths, p_ttls, p_field_digests) with ordinality
           as u(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, o)
     -- Shard by shard; within a shard keys in (scope, hash) order (so batches that share keys lock them
     -- in one order and never deadlock), a repeated key's requests in input order.
     order by get_shard_id_for_distribution_column('workhorse.job', workhorse.id_bucket(u.id)), u.scope, u.kh, u.o
  loop
    select * into d
      from workhorse.enqueue_one_at(
             r.bucket, r.o::integer, r.id, r.queue, r.type, p_payloads -> (r.o::integer - 1), r.run_at,
             r.max_attempts, r.retry_policy, r.deadline, r.execution_timeout_ms, r.concurrency_key,
             coalesce(p_tags[r.tag_off + 1 : r.tag_off + r.tag_count], '{}'), r.mode, r.scope, r.kh, r.key_preview,
             r.key_length, r.ttl_ms, r.fd, false);
    if d.outcome = 'accepted' then
      v_queues := v_queues || r.queue;
    end if;
    v_ord := v_ord || r.o::integer;
    v_job := v_job || d.job_id;
    v_out := v_out || d.outcome;
    v_dig := v_dig || d.request_digest;
  end loop;
  if p_notify then
    perform pg_notify('workhorse_jobs', q) from (select distinct q from unnest(v_queues) q) x;
  end if;
  return query select u.o, u.j, u.oc, u.d from unnest(v_ord, v_job, v_out, v_dig) as u(o, j, oc, d) order by u.o;
end $$;
