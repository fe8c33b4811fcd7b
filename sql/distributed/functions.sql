-- The distributed layout's functions (Citus), applied by migrate({ distributed: true }) after
-- layout.sql and again after every numbered migration, since those may redefine a function by name.

-- The decision for one request on the shard of its bucket (p_bucket = the key's bucket, or the
-- unkeyed job id's). Delegated to the node that holds the shard: called outside a transaction block,
-- the coordinator forwards the call whole, and every statement inside is a local read or write of
-- that one shard. Same bodies as workhorse.enqueue_debounce and workhorse.enqueue_one, with the
-- bucket in every key and insert; p_ordinal names the request in a conflict (batches call this once
-- per request).
create or replace function workhorse.enqueue_debounce_at(
  p_bucket integer, p_id uuid, p_queue text, p_type text, p_payload jsonb, p_max_attempts integer, p_retry_policy jsonb,
  p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text, p_tags text[], p_scope text,
  p_key_hash bytea, p_key_preview text, p_key_length integer, p_window_ms bigint, p_digests bytea,
  p_schedule text, p_max_wait_ms bigint, p_notify boolean,
  out job_id uuid, out outcome text, out reason text, out request_digest text)
language plpgsql as $$
#variable_conflict use_variable
declare
  v_rdigest bytea := sha256(p_digests);
  v_due timestamptz := now() + p_window_ms * interval '1 millisecond';
  v_b record;
  v_j record;
  v_pending boolean;
  v_max_wait bigint;
  v_run_at timestamptz;
  v_expires timestamptz;
  v_bound boolean := false;
  v_now timestamptz := now(); -- Citus evaluates no now() inside CASE
  v_holder uuid;
begin
  for attempt in 1 .. 5 loop
    -- Lock order (docs/decisions.md, "Lock order"): the job, then its binding, as purge, redrive and
    -- job deletion take them. The binding is read first without a lock to learn its job.
    select b.job_id into v_holder
      from workhorse.key_binding b
     where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
    if not found then
      insert into workhorse.key_binding
        (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at, schedule, max_wait_ms)
      values (p_bucket, p_scope, p_key_hash, p_id, 'debounce', p_key_preview, p_key_length, p_digests, v_rdigest, p_window_ms,
              now(), v_due, p_schedule, p_max_wait_ms)
      on conflict (bucket, scope, key_hash) do nothing;
      v_bound := found;
      exit when v_bound;
      -- Bound by another transaction after our snapshot: the next pass reads its row.
      continue;
    end if;

    -- Pending and never started: a retried or released job has started before. The job first,
    -- then the binding, locked only while it still names that job (a binding released or rebound
    -- between the reads is left unlocked and read again).
    select j.state, j.run_at, j.attempt, j.started_at into v_j from workhorse.job j where j.bucket = p_bucket and j.id = v_holder for update;
    v_pending := found and v_j.state in ('scheduled', 'ready') and v_j.attempt = 0 and v_j.started_at is null;
    select b.job_id, b.mode, b.expires_at, b.created_at, b.request_digest, b.max_wait_ms into v_b
      from workhorse.key_binding b
     where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash and b.job_id = v_holder
       for update;
    continue when not found;
    -- Bound to this call's own id: an earlier try of this call committed it; nothing to decide again.
    if v_b.job_id = p_id then
      job_id := p_id;
      outcome := 'replayed';
      request_digest := encode(v_rdigest, 'hex');
      return;
    end if;

    if v_b.expires_at > now() then
      job_id := v_b.job_id;
      request_digest := encode(v_rdigest, 'hex');
      if v_b.mode <> 'debounce' then
        outcome := 'non_replaceable';
        reason := 'incompatible_key_mode';
        return;
      end if;
      if not v_pending then
        outcome := 'non_replaceable';
        reason := 'not_pending';
        return;
      end if;
      -- Replace in place. The max wait is counted from the first acceptance; the smallest cap any
      -- request of the stream asked for holds.
      v_max_wait := least(v_b.max_wait_ms, p_max_wait_ms);
      if p_schedule = 'preserve' then
        v_run_at := v_j.run_at;
        v_expires := v_b.expires_at;
      else
        v_run_at := least(v_due, v_b.created_at + v_max_wait * interval '1 millisecond');
        v_expires := v_run_at;
      end if;
      update workhorse.job j
         set queue = p_queue, type = p_type, payload = coalesce(p_payload, 'null'::jsonb),
             max_attempts = p_max_attempts, retry_policy = p_retry_policy, deadline = p_deadline,
             execution_timeout_ms = p_execution_timeout_ms, concurrency_key = p_concurrency_key, tags = p_tags,
             request_digest = v_rdigest, run_at = v_run_at,
             state = case when v_run_at > v_now then 'scheduled' else 'ready' end, updated_at = v_now
       where j.bucket = p_bucket and j.id = v_b.job_id;
      update workhorse.key_binding b
         set field_digests = p_digests, request_digest = v_rdigest, ttl_ms = p_window_ms, expires_at = v_expires,
             schedule = p_schedule, max_wait_ms = v_max_wait
       where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_b.job_id, 'debounced', jsonb_build_object(
                'priorRequestDigest', encode(v_b.request_digest, 'hex'),
                'requestDigest', encode(v_rdigest, 'hex'),
                'schedule', p_schedule, 'windowMs', p_window_ms, 'runAt', v_run_at, 'expiresAt', v_expires,
                'maxWaitUntil', v_b.created_at + v_max_wait * interval '1 millisecond'));
      if p_notify and v_run_at <= now() then
        perform pg_notify('workhorse_jobs', p_queue);
      end if;
      outcome := 'replaced';
      return;
    end if;

    -- The window is over. A job that has not started yet will run: a second one would do the work twice.
    if v_b.mode = 'debounce' and v_pending then
      job_id := v_b.job_id;
      request_digest := encode(v_rdigest, 'hex');
      outcome := 'non_replaceable';
      reason := 'window_elapsed_pending';
      return;
    end if;
    update workhorse.key_binding b
       set job_id = p_id, mode = 'debounce', key_preview = p_key_preview, key_length = p_key_length,
           field_digests = p_digests, request_digest = v_rdigest, ttl_ms = p_window_ms, created_at = now(),
           expires_at = v_due, schedule = p_schedule, max_wait_ms = p_max_wait_ms
     where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
    v_bound := true;
    exit;
  end loop;
  if not v_bound then
    raise exception using errcode = '40001',
      message = 'workhorse: the debounce binding kept changing under this enqueue; retry it';
  end if;
  insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at)
  values (p_bucket, p_id, p_queue, p_type, coalesce(p_payload, 'null'::jsonb), 'scheduled', v_due, p_max_attempts,
          p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags, p_scope, p_key_hash,
          'debounce', p_key_preview, p_key_length, p_window_ms, v_rdigest, v_due);
  job_id := p_id;
  outcome := 'accepted';
end $$;

-- p_retry: as workhorse.enqueue_one's (migration 013), a retry first looks for the job its own id names.
drop function if exists workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb,
  timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint);
create or replace function workhorse.enqueue_one_at(
  p_bucket integer, p_ordinal integer, p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests bytea, p_notify boolean, p_schedule text, p_max_wait_ms bigint, p_retry boolean,
  out job_id uuid, out outcome text, out request_digest text, out reason text)
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
  -- A retry of a call whose earlier try committed: that try's job, reported as a replay of the
  -- proposed id (the client says accepted); nothing is written.
  if p_retry and exists (select 1 from workhorse.job j where j.bucket = p_bucket and j.id = p_id) then
    job_id := p_id;
    outcome := 'replayed';
    return;
  end if;
  if p_mode = 'debounce' then
    select d.job_id, d.outcome, d.request_digest, d.reason into job_id, outcome, request_digest, reason
      from workhorse.enqueue_debounce_at(
             p_bucket, p_id, p_queue, p_type, v_payload, p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms,
             p_concurrency_key, p_tags, p_scope, p_key_hash, p_key_preview, p_key_length, p_ttl_ms,
             substring(p_field_digests from 1 for 32)
             || substring(sha256(convert_to(v_payload::text, 'UTF8')) from 1 for 8)
             || substring(p_field_digests from 33),
             coalesce(p_schedule, 'reset'), p_max_wait_ms, p_notify) d;
    return;
  end if;
  if p_key_hash is not null then
    v_digests := substring(p_field_digests from 1 for 32)
                 || substring(sha256(convert_to(v_payload::text, 'UTF8')) from 1 for 8)
                 || substring(p_field_digests from 33);
    v_rdigest := sha256(v_digests);
    for attempt in 1 .. 5 loop
      -- Live or not: a binding naming this call's own id was bound by an earlier try of it.
      select b.job_id, b.mode, b.field_digests, b.request_digest, b.expires_at > v_now as live into v_live
        from workhorse.key_binding b
       where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
      if found and v_live.job_id = p_id then
        job_id := p_id;
        outcome := 'replayed';
        return;
      end if;
      if found and v_live.live then
        if v_live.request_digest = v_rdigest and v_live.mode = p_mode then
          job_id := v_live.job_id;
          outcome := case when p_mode = 'throttle' then 'coalesced' else 'replayed' end;
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
        where b.expires_at <= v_now and b.job_id <> excluded.job_id; -- Citus: no now() in ON CONFLICT .. WHERE
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
  'workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean)',
  'p_bucket', colocate_with => 'workhorse.job');

-- workhorse.enqueue_batch_recall (migration 013) on the distributed layout: the same answers, each
-- read a router query on its bucket (a job's from its id, a binding's from its key).
create or replace function workhorse.enqueue_batch_recall(
  p_ids uuid[], p_modes text[], p_scopes text[], p_key_hashes bytea[], p_payloads jsonb, p_field_digests bytea[])
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, reason text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_made uuid[] := '{}';
  v_id uuid;
  r record;
  v_job uuid;
  v_in_batch boolean;
  v_bmode text;
  v_bexpires timestamptz;
  v_j record;
  v_now timestamptz := now();
begin
  foreach v_id in array p_ids loop
    if exists (select 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_id) and j.id = v_id) then
      v_made := v_made || v_id;
    end if;
  end loop;
  for r in
    select x.id, x.mode, x.scope, x.kh, x.o::integer as o, workhorse.key_bucket(x.scope, x.kh) as kb,
           sha256(substring(x.fd from 1 for 32)
                  || substring(sha256(convert_to(coalesce(p_payloads -> (x.o::integer - 1), 'null'::jsonb)::text,
                                                 'UTF8')) from 1 for 8)
                  || substring(x.fd from 33)) as rdigest
      from unnest(p_ids, p_modes, p_scopes, p_key_hashes, p_field_digests) with ordinality as x(id, mode, scope, kh, fd, o)
     order by x.o
  loop
    ordinal := r.o;
    request_digest := encode(r.rdigest, 'hex');
    reason := null;
    if r.id = any (v_made) then
      job_id := r.id;
      outcome := 'replayed';
      return next;
      continue;
    end if;
    select u.id into v_job
      from unnest(p_ids, p_scopes, p_key_hashes) with ordinality as u(id, s, k, o)
     where u.s = r.scope and u.k = r.kh and u.id = any (v_made)
     order by u.o limit 1;
    v_in_batch := v_job is not null;
    v_bmode := null;
    v_bexpires := null;
    if not v_in_batch then
      select b.job_id, b.mode, b.expires_at into v_job, v_bmode, v_bexpires
        from workhorse.key_binding b where b.bucket = r.kb and b.scope = r.scope and b.key_hash = r.kh;
      if v_job is null then
        select j.id into v_job from workhorse.job j
         where j.bucket = r.kb and j.key_scope = r.scope and j.key_hash = r.kh order by j.created_at desc limit 1;
      end if;
      if v_job is null then
        raise exception 'workhorse: this batch committed on an earlier try, but request % has neither a binding nor a job for its key now', r.o;
      end if;
    end if;
    select j.key_mode, j.request_digest,
           j.state in ('scheduled', 'ready') and j.attempt = 0 and j.started_at is null as pending
      into v_j from workhorse.job j where j.bucket = workhorse.id_bucket(v_job) and j.id = v_job;
    job_id := v_job;
    if r.mode = 'throttle' then
      outcome := 'coalesced';
    elsif r.mode <> 'debounce' then
      outcome := 'replayed';
    elsif coalesce(v_bmode, v_j.key_mode) is distinct from 'debounce' then
      outcome := 'non_replaceable';
      reason := 'incompatible_key_mode';
    elsif v_in_batch or v_j.request_digest = r.rdigest then
      outcome := 'replaced';
    elsif not coalesce(v_j.pending, false) then
      outcome := 'non_replaceable';
      reason := 'not_pending';
    elsif v_bexpires <= v_now then
      outcome := 'non_replaceable';
      reason := 'window_elapsed_pending';
    else
      outcome := 'replaced';
    end if;
    return next;
  end loop;
end $$;

-- A batch on the coordinator, one transaction (two-phase commit across the workers it touched, so a
-- conflict anywhere leaves nothing anywhere): the requests go shard by shard, each decided by
-- enqueue_one_at on its shard; within a shard keys in (scope, hash) order, so batches that share
-- keys lock them in one order and never deadlock, and a key's requests in input order, so a
-- repeated key sees its first request's binding (later ones replay, coalesce, replace or conflict,
-- as on one node). Same signature and results as the single-node function; p_legacy_key_hashes is
-- ignored (the distributed layout starts empty, so no binding predates the keyed hashes).
create or replace function workhorse.enqueue_batch(
  p_ids uuid[], p_queues text[], p_types text[], p_payloads jsonb, p_run_ats timestamptz[],
  p_max_attempts integer[], p_retry_policies jsonb[], p_deadlines timestamptz[], p_execution_timeouts bigint[],
  p_concurrency_keys text[], p_tags text[], p_tag_counts integer[], p_modes text[], p_scopes text[],
  p_key_hashes bytea[], p_key_previews text[], p_key_lengths integer[], p_ttls bigint[], p_field_digests bytea[],
  p_legacy_key_hashes bytea[], p_notify boolean, p_schedules text[] default null, p_max_waits bigint[] default null,
  p_retry boolean default false)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, reason text)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  d record;
  v_id uuid;
  v_ord integer[] := '{}';
  v_job uuid[] := '{}';
  v_out text[] := '{}';
  v_dig text[] := '{}';
  v_why text[] := '{}';
  v_queues text[] := '{}';
  v_detail jsonb;
begin
  -- A retry of a batch whose earlier try committed (one proposed id exists: the batch is atomic):
  -- its answers read back from what it stored, nothing written (as on one node).
  if p_retry then
    foreach v_id in array p_ids loop
      if exists (select 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_id) and j.id = v_id) then
        return query select * from workhorse.enqueue_batch_recall(p_ids, p_modes, p_scopes, p_key_hashes, p_payloads,
                                                                 p_field_digests);
        return;
      end if;
    end loop;
  end if;
  <<requests>>
  begin
  for r in
    select u.*, (sum(u.tag_count) over (order by u.o) - u.tag_count)::integer as tag_off,
           workhorse.id_bucket(u.id) as bucket
      from unnest(p_ids, p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                  p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_modes, p_scopes, p_key_hashes,
                  p_key_previews, p_key_lengths, p_ttls, p_field_digests) with ordinality
           as u(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, o)
     order by get_shard_id_for_distribution_column('workhorse.job', workhorse.id_bucket(u.id)), u.scope, u.kh, u.o
  loop
    select * into d
      from workhorse.enqueue_one_at(
             r.bucket, r.o::integer, r.id, r.queue, r.type, p_payloads -> (r.o::integer - 1), r.run_at,
             r.max_attempts, r.retry_policy, r.deadline, r.execution_timeout_ms, r.concurrency_key,
             coalesce(p_tags[r.tag_off + 1 : r.tag_off + r.tag_count], '{}'), r.mode, r.scope, r.kh, r.key_preview,
             r.key_length, r.ttl_ms, r.fd, false, p_schedules[r.o], p_max_waits[r.o], false);
    if d.outcome = 'accepted' or (d.outcome = 'replaced' and p_notify) then
      v_queues := v_queues || r.queue;
    end if;
    v_ord := v_ord || r.o::integer;
    v_job := v_job || d.job_id;
    v_out := v_out || d.outcome;
    v_dig := v_dig || d.request_digest;
    v_why := v_why || d.reason;
  end loop;
  exception when sqlstate 'WH409' then
    -- A conflict with an earlier request of this batch names no existing job (it was never
    -- committed), as on one node: one of this batch's own proposed ids.
    get stacked diagnostics v_detail = pg_exception_detail;
    if (v_detail ->> 'existingJobId')::uuid = any (p_ids) then
      v_detail := jsonb_set(v_detail, '{existingJobId}', 'null');
    end if;
    raise exception using errcode = 'WH409', message = 'workhorse: idempotency conflict', detail = v_detail::text;
  end requests;
  if p_notify then
    perform pg_notify('workhorse_jobs', q) from (select distinct q from unnest(v_queues) q) x;
  end if;
  return query
    select u.o, u.j, u.oc, u.d, u.w from unnest(v_ord, v_job, v_out, v_dig, v_why) as u(o, j, oc, d, w) order by u.o;
end $$;

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
         array_agg(jsonb_build_object('name', 'DeadlineExceeded',
                                      'message', format('deadline %s passed before the job ran', u.deadline)))
    into v_overdue, v_errors
    from unnest(v_ids, v_deadlines) as u(id, deadline) where u.deadline <= v_now;
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

create or replace function workhorse.claim_jobs(p_queues text[], p_types text[], p_owner text, p_limit integer,
                                                p_lease_ms integer, p_reap boolean)
returns table (id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer,
               run_at timestamptz, deadline timestamptz, execution_timeout_ms bigint, concurrency_key text,
               tags text[], created_at timestamptz, lease_expires_at timestamptz)
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

  return query
  select c.id, c.queue::text, c.type::text, c.payload, c.attempt::integer, c.max_attempts::integer, c.run_at,
         c.deadline, c.execution_timeout_ms::bigint, c.concurrency_key, c.tags::text[], c.created_at,
         c.lease_expires_at
    from unnest(v_claimed) c
   order by c.run_at, c.id;
end $$;

-- Lapsed leases, shard by shard (FOR UPDATE SKIP LOCKED within one shard), as on one node: each gets
-- a lease_expired event and goes back to 'ready' for a new attempt (canceled instead when an
-- operator asked), or to 'failed' on its last attempt or past its deadline.
create or replace function workhorse.reap_expired_leases(p_queues text[], p_limit integer)
returns integer language plpgsql as $$
declare
  v_buckets integer[];
  v_now timestamptz := now();
  v_count integer := 0;
  v_n integer;
  v_rows workhorse.lapsed_lease[];
begin
  for v_buckets in select b.buckets from workhorse.shard_bucket b order by b.shard_id loop
    exit when v_count >= p_limit;
    select coalesce(array_agg(row(x.*)::workhorse.lapsed_lease), '{}') into v_rows
      from (select j.id, j.attempt, j.deadline, j.lease_owner, j.lease_expires_at, j.cancel_requested_at is not null,
                   j.cancel_requested_by, j.cancel_reason,
                   case when j.attempt >= j.max_attempts or j.deadline <= v_now then 'failed' else 'ready' end,
                   jsonb_build_object('name', 'LeaseExpired',
                     'message', format('attempt %s: lease held by %s lapsed at %s', j.attempt, j.lease_owner,
                                       j.lease_expires_at))
              from workhorse.job j
             where j.bucket = any (v_buckets) and j.state = 'active' and j.lease_expires_at < v_now
               and (p_queues is null or j.queue = any (p_queues))
             order by j.lease_expires_at
             limit p_limit - v_count
               for update of j skip locked) x;
    v_n := cardinality(v_rows);
    continue when v_n = 0;
    v_count := v_count + v_n;

    update workhorse.job j
       set state = r.next_state, lease_expires_at = null, lease_owner = null, updated_at = v_now,
           finished_at = case when r.next_state = 'failed' then v_now end,
           last_error = r.last_error -- formatted in the read (Citus runs no STABLE format() on columns in an UPDATE)
      from unnest(v_rows) r
     where j.bucket = any (v_buckets) and j.id = r.id;

    insert into workhorse.job_event (job_id, kind, data)
    select r.id, e.kind, e.data
      from unnest(v_rows) r
     cross join lateral (
       values (1, 'lease_expired', jsonb_build_object('attempt', r.attempt, 'worker', r.lease_owner,
                                                     'leaseExpiresAt', r.lease_expires_at)),
              (2, case when r.next_state = 'failed' and r.deadline <= v_now then 'deadline_exceeded' end,
                  jsonb_build_object('attempt', r.attempt, 'deadline', r.deadline)),
              (3, case when r.next_state = 'failed' then 'failed' end,
                  jsonb_build_object('attempt', r.attempt,
                                     'reason', case when r.deadline <= v_now then 'deadline_exceeded'
                                                    else 'max_attempts' end)),
              (0, case when r.next_state = 'ready' and r.cancel_requested then 'canceled' end,
                  jsonb_build_object('attempt', r.attempt, 'actor', r.cancel_requested_by, 'reason', r.cancel_reason))
     ) as e(ord, kind, data)
     where e.kind is not null
     order by r.id, e.ord;
  end loop;
  return v_count;
end $$;

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
begin
  with done as (
    update workhorse.job j
       set state = 'succeeded', result = r.result, finished_at = now(), updated_at = now(), lease_expires_at = null
      from unnest(p_ids, p_attempts, p_owners, p_results) as r(id, attempt, owner, result)
     where j.bucket = workhorse.id_bucket(r.id) and j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner
       and j.state = 'active'
    returning j.id, j.attempt, j.lease_owner, j.started_at
  )
  select array_agg(d.id), array_agg(d.attempt), array_agg(d.lease_owner), array_agg(d.started_at)
    into v_ids, v_attempts, v_owners, v_started
    from done d;
  if v_ids is null then
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'succeeded',
         jsonb_build_object('attempt', u.attempt, 'worker', u.owner,
                            'durationMs', round(extract(epoch from now() - u.started) * 1000))
    from unnest(v_ids, v_attempts, v_owners, v_started) as u(id, attempt, owner, started);
  return query select u.id from unnest(v_ids) as u(id);
end $$;

create or replace function workhorse.release_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_reason text)
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_attempts integer[];
  v_owners text[];
  v_canceled boolean[];
  v_by text[];
  v_reasons text[];
begin
  with before as (
    select j.id, r.attempt, r.owner, j.cancel_requested_at is not null as canceled, j.cancel_requested_by,
           j.cancel_reason
      from workhorse.job j
      join unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
        on j.bucket = workhorse.id_bucket(r.id) and j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner
     where j.state = 'active'
  ),
  rel as (
    update workhorse.job j
       set state = 'ready', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, updated_at = now()
      from before b
     where j.id = b.id and j.state = 'active'
    returning j.id
  )
  select array_agg(b.id), array_agg(b.attempt), array_agg(b.owner), array_agg(b.canceled),
         array_agg(b.cancel_requested_by), array_agg(b.cancel_reason)
    into v_ids, v_attempts, v_owners, v_canceled, v_by, v_reasons
    from before b where b.id in (select r.id from rel r);
  if v_ids is null then
    return;
  end if;
  -- The shard trigger turned a cancel-requested release into canceled: record it.
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'canceled', jsonb_build_object('attempt', u.attempt, 'actor', u.by, 'reason', u.reason)
    from unnest(v_ids, v_attempts, v_canceled, v_by, v_reasons) as u(id, attempt, canceled, by, reason)
   where u.canceled;
  insert into workhorse.job_event (job_id, kind, data)
  select u.id, 'released', jsonb_build_object('attempt', u.attempt, 'worker', u.owner, 'reason', p_reason)
    from unnest(v_ids, v_attempts, v_owners) as u(id, attempt, owner);
  return query select u.id from unnest(v_ids) as u(id);
end $$;

create or replace function workhorse.cancel_attempt(p_id uuid, p_attempt integer, p_owner text)
returns table (id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v record;
begin
  update workhorse.job j
     set state = 'canceled', finished_at = now(), updated_at = now(), lease_expires_at = null
   where j.bucket = workhorse.id_bucket(p_id) and j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner
     and j.state = 'active'
  returning j.id, j.attempt, j.lease_owner, j.cancel_requested_by, j.cancel_reason into v;
  if not found then
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  values (v.id, 'canceled', jsonb_build_object('attempt', v.attempt, 'worker', v.lease_owner,
                                               'actor', v.cancel_requested_by, 'reason', v.cancel_reason));
  return query select v.id;
end $$;

create or replace function workhorse.job_owns_live_key(p_job uuid) returns boolean
language plpgsql stable as $$
begin
  return exists (
    select 1 from workhorse.job j
      join workhorse.key_binding b
        on b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
     where j.bucket = workhorse.id_bucket(p_job) and j.id = p_job and b.expires_at > now());
end $$;

-- A failed attempt and a checkpoint: the single-node functions (fail_job as of migration 012) with
-- the job's bucket (from its id) in every statement on workhorse.job, so they reach one shard.
-- Events carry the coordinator's now() explicitly: a worker that joins the transaction later has a
-- later now() of its own. A retry the shard trigger turned into a cancel (an operator asked) gets
-- its `canceled` event here.
create or replace function workhorse.fail_job(p_id uuid, p_attempt integer, p_owner text, p_error jsonb, p_cause text,
                                   p_default_policy jsonb)
returns table (state text, run_at timestamptz, delay_ms bigint)
language plpgsql as $$
#variable_conflict use_column
declare
  j record;
  v_delay bigint;
  v_next timestamptz;
  v_state text;
  v_reason text;
  v_actual text;
  v_bucket integer := workhorse.id_bucket(p_id);
  v_now timestamptz := now();
begin
  select x.id, x.attempt, x.max_attempts, x.deadline, x.retry_policy
    into j
    from workhorse.job x
   where x.bucket = v_bucket and x.id = p_id and x.attempt = p_attempt and x.lease_owner = p_owner and x.state = 'active'
     for update;
  if not found then
    return;
  end if;

  v_delay := workhorse.retry_delay_ms(coalesce(j.retry_policy, p_default_policy), j.attempt);
  v_next := now() + v_delay * interval '1 millisecond';
  if p_cause = 'deadline_exceeded' or j.deadline <= now() or j.deadline <= v_next then
    v_state := 'failed';
    v_reason := 'deadline_exceeded';
  elsif j.attempt >= j.max_attempts then
    v_state := 'failed';
    v_reason := 'max_attempts';
  else
    v_state := case when v_delay > 0 then 'scheduled' else 'ready' end;
  end if;

  update workhorse.job x
     set state = v_state,
         run_at = case when v_state = 'failed' then x.run_at else v_next end,
         finished_at = case when v_state = 'failed' then v_now end, -- Citus: no now() inside CASE
         lease_expires_at = null,
         last_error = p_error,
         updated_at = now()
   where x.bucket = v_bucket and x.id = p_id
  returning x.state into v_actual;

  -- An operator asked to cancel this job before its worker saw it: the would-be retry became
  -- 'canceled' (trigger job_cancel_instead_of_retry, which wrote the 'canceled' event). Say so, and
  -- write no 'retry_scheduled' event for a retry that will not happen.
  if v_actual = 'canceled' then
    -- The shard trigger cannot write the event (job_event lives elsewhere): written here.
    insert into workhorse.job_event (job_id, at, kind, data)
    select p_id, v_now, 'canceled', jsonb_build_object('attempt', x.attempt, 'actor', x.cancel_requested_by,
                                                       'reason', x.cancel_reason)
      from workhorse.job x where x.bucket = v_bucket and x.id = p_id;
    return query select v_actual, null::timestamptz, null::bigint;
    return;
  end if;

  if p_cause = 'execution_timed_out' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'execution_timed_out', jsonb_build_object('attempt', j.attempt, 'worker', p_owner));
  end if;
  if v_reason = 'deadline_exceeded' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'deadline_exceeded', jsonb_build_object('attempt', j.attempt, 'deadline', j.deadline));
  end if;
  if v_state = 'failed' then
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'failed', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'reason', v_reason,
                                               'cause', p_cause, 'error', p_error));
    return query select v_state, null::timestamptz, null::bigint;
  else
    insert into workhorse.job_event (job_id, at, kind, data)
    values (p_id, v_now, 'retry_scheduled', jsonb_build_object('attempt', j.attempt, 'worker', p_owner, 'cause', p_cause,
                                                        'runAt', v_next, 'delayMs', v_delay, 'error', p_error));
    return query select v_state, v_next, v_delay;
  end if;
end $$;

create or replace function workhorse.save_checkpoint(p_id uuid, p_attempt integer, p_owner text, p_name text, p_value jsonb,
                                          p_lease_ms integer)
returns table (status text, value jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_stored jsonb;
begin
  update workhorse.job j
     set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
   where j.bucket = workhorse.id_bucket(p_id) and j.id = p_id and j.attempt = p_attempt and j.lease_owner = p_owner and j.state = 'active';
  if not found then
    return query select 'stale'::text, null::jsonb;
    return;
  end if;
  insert into workhorse.job_checkpoint (job_id, name, attempt, value)
  values (p_id, p_name, p_attempt, p_value)
  on conflict (job_id, name) do nothing;
  if not found then
    select c.value into v_stored from workhorse.job_checkpoint c where c.job_id = p_id and c.name = p_name;
    return query select 'exists'::text, v_stored;
    return;
  end if;
  insert into workhorse.job_event (job_id, kind, data)
  values (p_id, 'checkpoint_saved', jsonb_build_object('attempt', p_attempt, 'name', p_name, 'worker', p_owner));
  return query select 'saved'::text, p_value;
end $$;

-- Cancel (operator), job by job in id order: each job is locked on its shard (the bucket in its id),
-- a pending one is canceled, an active one asked to stop (its worker sees it at the next heartbeat);
-- any other state is counted as unchanged. One audit row, as on one node.
create or replace function workhorse.cancel_jobs(p_ids uuid[], p_actor text, p_reason text)
returns table (canceled integer, cancel_requested integer, unchanged jsonb)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_bucket integer;
  v_state text;
  v_attempt integer;
  v_now timestamptz := now();
  v_canceled integer := 0;
  v_requested integer := 0;
  v_other text[] := '{}';
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    v_bucket := workhorse.id_bucket(v_id);
    select j.state, j.attempt into v_state, v_attempt
      from workhorse.job j where j.bucket = v_bucket and j.id = v_id for update of j;
    if not found then
      v_other := v_other || 'missing'::text;
    elsif v_state in ('scheduled', 'ready') then
      update workhorse.job j
         set state = 'canceled', finished_at = v_now, updated_at = v_now, cancel_requested_at = v_now,
             cancel_requested_by = p_actor, cancel_reason = p_reason
       where j.bucket = v_bucket and j.id = v_id;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'canceled', jsonb_build_object('actor', p_actor, 'reason', p_reason));
      v_canceled := v_canceled + 1;
    elsif v_state = 'active' then
      update workhorse.job j
         set cancel_requested_at = v_now, cancel_requested_by = p_actor, cancel_reason = p_reason, updated_at = v_now
       where j.bucket = v_bucket and j.id = v_id;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'cancel_requested',
              jsonb_build_object('actor', p_actor, 'reason', p_reason, 'attempt', v_attempt));
      v_requested := v_requested + 1;
    else
      v_other := v_other || v_state;
    end if;
  end loop;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'cancel',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('requested', cardinality(p_ids), 'canceled', v_canceled,
                             'cancelRequested', v_requested, 'unchanged', v_unchanged));
  return query select v_canceled, v_requested, v_unchanged;
end $$;

-- Retention, shard by shard (SKIP LOCKED works within one shard): up to p_limit terminal jobs that
-- became terminal before now() - p_older_than_ms, oldest first within each shard, never one that owns
-- a live key (a colocated join: the binding is on the job's shard), with their events, checkpoints
-- and redrive requests. The job's expired binding goes with it (shard trigger).
create or replace function workhorse.prune_finished_jobs(p_older_than_ms bigint, p_limit integer)
returns table (jobs_deleted integer, events_deleted integer)
language plpgsql as $$
#variable_conflict use_column
declare
  v_buckets integer[];
  v_ids uuid[];
  v_now timestamptz := now();
  v_jobs integer := 0;
  v_events integer := 0;
  v_n integer;
begin
  for v_buckets in select b.buckets from workhorse.shard_bucket b order by b.shard_id loop
    exit when v_jobs >= p_limit;
    select coalesce(array_agg(d.id), '{}') into v_ids
      from (select j.id from workhorse.job j
             where j.bucket = any (v_buckets)
               and j.state in ('succeeded', 'failed', 'canceled', 'purged')
               and j.updated_at < v_now - p_older_than_ms * interval '1 millisecond'
               and not exists (
                     select 1 from workhorse.key_binding b
                      where b.bucket = any (v_buckets) and b.bucket = j.bucket and b.scope = j.key_scope
                        and b.key_hash = j.key_hash and b.job_id = j.id and b.expires_at > v_now)
             order by j.updated_at
             limit p_limit - v_jobs
               for update of j skip locked) d;
    continue when cardinality(v_ids) = 0;
    delete from workhorse.job_event e where e.job_id = any (v_ids);
    get diagnostics v_n = row_count;
    v_events := v_events + v_n;
    delete from workhorse.job_checkpoint c where c.job_id = any (v_ids);
    delete from workhorse.redrive_request q where q.source_job_id = any (v_ids);
    delete from workhorse.job j where j.bucket = any (v_buckets) and j.id = any (v_ids);
    v_jobs := v_jobs + cardinality(v_ids);
  end loop;
  return query select v_jobs, v_events;
end $$;

-- Purge by ids (operator), job by job on each job's shard; then the bindings the purged jobs own are
-- released through a colocated join (job and binding share the bucket). One audit row.
create or replace function workhorse.release_keys(p_jobs uuid[]) returns integer
language plpgsql as $$
declare
  v_released integer;
begin
  delete from workhorse.key_binding b
   using workhorse.job j
   where j.id = any (p_jobs) and b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash
     and b.job_id = j.id;
  get diagnostics v_released = row_count;
  return v_released;
end $$;

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
  v_unchanged jsonb;
begin
  for v_id in select distinct u.id from unnest(p_ids) u(id) order by 1 loop
    v_bucket := workhorse.id_bucket(v_id);
    update workhorse.job j
       set state = 'purged', purged_at = v_now, purged_by = p_actor, purge_reason = p_reason, updated_at = v_now
     where j.bucket = v_bucket and j.id = v_id and j.state in ('ready', 'scheduled');
    if found then
      v_purged := v_purged || v_id;
      insert into workhorse.job_event (job_id, kind, data)
      values (v_id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason));
    else
      select j.state into v_state from workhorse.job j where j.bucket = v_bucket and j.id = v_id;
      v_other := v_other || coalesce(v_state, 'missing');
    end if;
  end loop;
  select coalesce(jsonb_object_agg(s.state, s.n), '{}') into v_unchanged
    from (select u.state, count(*) as n from unnest(v_other) u(state) group by 1) s;
  v_released := workhorse.release_keys(v_purged);
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'purge_job',
          case when cardinality(p_ids) = 1 then 'job:' || p_ids[1] else 'jobs:' || cardinality(p_ids) end,
          p_reason,
          jsonb_build_object('status', 'ok', 'requested', cardinality(p_ids), 'purged', cardinality(v_purged),
                             'releasedBindings', v_released, 'unchanged', v_unchanged));
  return query select cardinality(v_purged), v_released, v_unchanged;
end $$;

-- Redrive (operator): sources locked one by one on their shards, in id order; the redriven job is
-- made in its source's bucket (the client gives the new id the source's bucket), so a live key of the
-- source moves to it within one shard.
create or replace function workhorse.move_live_keys(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
declare
  v_moved integer;
  v_bucket integer := workhorse.id_bucket(p_from);
  v_now timestamptz := now();
begin
  update workhorse.key_binding b set job_id = p_to
    from workhorse.job s
   where s.bucket = v_bucket and s.id = p_from and b.bucket = s.bucket and b.scope = s.key_scope
     and b.key_hash = s.key_hash and b.job_id = p_from and b.expires_at > v_now;
  get diagnostics v_moved = row_count;
  if v_moved > 0 then
    update workhorse.job t
       set key_scope = s.key_scope, key_hash = s.key_hash, key_mode = s.key_mode, key_preview = s.key_preview,
           key_length = s.key_length, key_ttl_ms = s.key_ttl_ms, request_digest = s.request_digest
      from workhorse.job s
     where t.bucket = v_bucket and t.id = p_to and s.bucket = t.bucket and s.id = p_from;
  end if;
  return v_moved;
end $$;

create or replace function workhorse.redrive_jobs(p_sources uuid[], p_new_ids uuid[], p_request_hash bytea, p_actor text,
                                       p_reason text, p_dry_run boolean)
returns table (source_job_id uuid, status text, job_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  v_src record;
  v_status text[] := '{}';
  v_src_ids uuid[] := '{}';
  v_job_ids uuid[] := '{}';
  v_moved integer := 0;
  v_queues text[] := '{}';
  v_lock uuid;
begin
  -- Every source is locked up front, in id order: overlapping bulk redrives queue instead of
  -- deadlocking, and a concurrent identical request, once the first commits, finds its
  -- redrive_request (each statement below reads a fresh snapshot) and replays.
  if not p_dry_run then
    for v_lock in select distinct u.id from unnest(p_sources) u(id) order by 1 loop
      perform 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_lock) and j.id = v_lock for update;
    end loop;
  end if;
  for r in select s.src, s.new_id, s.ord
             from unnest(p_sources, p_new_ids) with ordinality as s(src, new_id, ord)
            order by s.ord loop
    if r.src = any (v_src_ids) then
      -- The same source twice in one call: same answer as the first time.
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || (case when v_status[array_position(v_src_ids, r.src)] = 'redriven' then 'replayed'
                                    else v_status[array_position(v_src_ids, r.src)] end);
      v_job_ids := v_job_ids || v_job_ids[array_position(v_src_ids, r.src)];
      continue;
    end if;
    select q.job_id, q.requested_by, q.reason into v_src
      from workhorse.redrive_request q where q.source_job_id = r.src and q.request_hash = p_request_hash;
    if found then
      if v_src.requested_by is distinct from p_actor or v_src.reason is distinct from p_reason then
        raise exception using
          errcode = 'WH412',
          message = 'workhorse: redrive request id reused with a different request',
          detail = jsonb_build_object(
            'sourceJobId', r.src, 'existingJobId', v_src.job_id,
            'conflictingFields', to_jsonb(array_remove(array[
              case when v_src.reason is distinct from p_reason then 'reason' end,
              case when v_src.requested_by is distinct from p_actor then 'requestedBy' end], null)))::text;
      end if;
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || 'replayed'::text;
      v_job_ids := v_job_ids || v_src.job_id;
      continue;
    end if;
    select j.id, j.state, j.queue, j.type, j.payload, j.tags, j.concurrency_key, j.retry_policy, j.max_attempts,
           j.execution_timeout_ms
      into v_src
      from workhorse.job j where j.bucket = workhorse.id_bucket(r.src) and j.id = r.src for update;
    v_src_ids := v_src_ids || r.src;
    if not found then
      v_status := v_status || 'not_found'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif v_src.state <> 'failed' then
      v_status := v_status || 'not_failed'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif p_dry_run then
      v_status := v_status || 'eligible'::text;
      v_job_ids := v_job_ids || null::uuid;
    else
      -- enqueued_inline null: this job's timeline starts with the explicit `enqueued` event below
      -- (it names the source and the operator), not with an entry made from key columns.
      insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy,
                                 execution_timeout_ms, concurrency_key, tags, redriven_from, enqueued_inline)
      values (workhorse.id_bucket(r.new_id), r.new_id, v_src.queue, v_src.type, v_src.payload, 'ready', now(), v_src.max_attempts,
              v_src.retry_policy, v_src.execution_timeout_ms, v_src.concurrency_key, v_src.tags, r.src, null);
      insert into workhorse.redrive_request (source_job_id, request_hash, requested_by, reason, job_id)
      values (r.src, p_request_hash, p_actor, p_reason, r.new_id);
      v_moved := v_moved + workhorse.move_live_keys(r.src, r.new_id);
      insert into workhorse.job_event (job_id, kind, data)
      values (r.new_id, 'enqueued', jsonb_build_object('queue', v_src.queue, 'runAt', now(), 'redrivenFrom', r.src,
                                                       'actor', p_actor, 'reason', p_reason)),
             (r.src, 'redriven', jsonb_build_object('jobId', r.new_id, 'actor', p_actor, 'reason', p_reason));
      v_queues := v_queues || v_src.queue::text;
      v_status := v_status || 'redriven'::text;
      v_job_ids := v_job_ids || r.new_id;
    end if;
  end loop;

  perform pg_notify('workhorse_jobs', q) from (select distinct unnest(v_queues) as q) x;
  if not p_dry_run then
    insert into workhorse.operator_audit (actor, action, target, reason, result)
    select p_actor, 'redrive',
           case when cardinality(p_sources) = 1 then 'job:' || p_sources[1] else 'jobs:' || cardinality(p_sources) end,
           p_reason,
           jsonb_build_object('requested', cardinality(p_sources), 'movedKeys', v_moved)
             || coalesce((select jsonb_object_agg(s.status, s.n)
                            from (select u.st as status, count(*) as n from unnest(v_status) u(st) group by 1) s), '{}');
  end if;
  return query select * from unnest(v_src_ids, v_status, v_job_ids);
end $$;
