-- enqueue_debounce (009) with the job locked before the binding, and its own earlier try recognised.
-- On Citus, the marks make workhorse.enqueue_debounce_at (called by enqueue_one_at): the decision on
-- the shard of p_bucket (the key's bucket), with the bucket in every key and insert.
--@citus-file enqueue_debounce_at
-- The signature before migration 018 (no p_trace_context): dropped so the new one replaces it.
drop function if exists workhorse.enqueue_debounce(uuid, text, text, jsonb, integer, jsonb, timestamptz, bigint, text, text[],
--@citus drop function if exists workhorse.enqueue_debounce_at(integer, uuid, text, text, jsonb, integer, jsonb, timestamptz, bigint,
                                         text, bytea, text, integer, bigint, bytea, text, bigint, boolean);
                                         --@citus text, text[], text, bytea, text, integer, bigint, bytea, text, bigint, boolean);

-- The signature before migration 026 (no p_hold_until): dropped so the new one replaces it.
drop function if exists workhorse.enqueue_debounce(uuid, text, text, jsonb, integer, jsonb, timestamptz, bigint, text, text[],
--@citus drop function if exists workhorse.enqueue_debounce_at(integer, uuid, text, text, jsonb, integer, jsonb, timestamptz, bigint,
                                         text, bytea, text, integer, bigint, bytea, text, bigint, boolean, text);
                                         --@citus text, text[], text, bytea, text, integer, bigint, bytea, text, bigint, boolean,
                                         --@citus+ text);

-- p_hold_until (docs/enqueue.md, "Key lifetimes"): with a lifetime the window sets only when the job
-- runs; the key is held, replaceable while the job is pending, until the job starts or finishes.
create or replace function workhorse.enqueue_debounce(
--@citus create or replace function workhorse.enqueue_debounce_at(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_max_attempts integer, p_retry_policy jsonb,
  --@citus p_bucket integer, p_id uuid, p_queue text, p_type text, p_payload jsonb, p_max_attempts integer, p_retry_policy jsonb,
  p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text, p_tags text[], p_scope text,
  p_key_hash bytea, p_key_preview text, p_key_length integer, p_window_ms bigint, p_digests bytea,
  p_schedule text, p_max_wait_ms bigint, p_notify boolean, p_trace_context text default null,
  p_hold_until text default null, out job_id uuid, out outcome text, out reason text, out request_digest text)
language plpgsql as $$
#variable_conflict use_variable
declare
  v_rdigest bytea := sha256(p_digests || workhorse.hold_until_digest(p_hold_until));
  v_due timestamptz := now() + p_window_ms * interval '1 millisecond';
  v_key_due timestamptz := case when p_hold_until is null then v_due else 'infinity' end;
  v_b record;
  v_j record;
  v_pending boolean;
  v_max_wait bigint;
  v_run_at timestamptz;
  v_expires timestamptz;
  v_bound boolean := false;
  --@citus+ v_now timestamptz := now(); -- Citus evaluates no now() inside CASE
  v_holder uuid;
begin
  for attempt in 1 .. 5 loop
    -- Lock order (docs/decisions.md, "Lock order"): the job, then its binding, as purge, redrive and
    -- job deletion take them. The binding is read first without a lock to learn its job.
    select b.job_id into v_holder
      from workhorse.key_binding b
     where b.scope = p_scope and b.key_hash = p_key_hash;
     --@citus where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
    if not found then
      insert into workhorse.key_binding
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
        --@citus (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at, schedule, max_wait_ms, hold_until)
      values (p_scope, p_key_hash, p_id, 'debounce', p_key_preview, p_key_length, p_digests, v_rdigest, p_window_ms,
      --@citus values (p_bucket, p_scope, p_key_hash, p_id, 'debounce', p_key_preview, p_key_length, p_digests, v_rdigest, p_window_ms,
              now(), v_key_due, p_schedule, p_max_wait_ms, p_hold_until)
      on conflict (scope, key_hash) do nothing;
      --@citus on conflict (bucket, scope, key_hash) do nothing;
      v_bound := found;
      exit when v_bound;
      -- Bound by another transaction after our snapshot: the next pass reads its row.
      continue;
    end if;

    -- Pending and never started: a retried or released job has started before. The job is locked
    -- first (a worker's claim, SKIP LOCKED, never takes it half-replaced), then the binding, so N
    -- racing requests on one key queue behind each other on the job.
    select j.state, j.run_at, j.attempt, j.started_at into v_j from workhorse.job j where j.id = v_holder for update;
    --@citus select j.state, j.run_at, j.attempt, j.started_at into v_j from workhorse.job j where j.bucket = p_bucket and j.id = v_holder for update;
    v_pending := found and v_j.state in ('scheduled', 'ready') and v_j.attempt = 0 and v_j.started_at is null;
    -- Locked only while it still names that job (READ COMMITTED rechecks the condition on the row's
    -- newest version): a binding released, or bound to another job, between the two reads is left
    -- unlocked and read again, so no binding lock is ever held while waiting for a job.
    select b.job_id, b.mode, b.expires_at, b.created_at, b.request_digest, b.max_wait_ms, b.ttl_ms into v_b
      from workhorse.key_binding b
     where b.scope = p_scope and b.key_hash = p_key_hash and b.job_id = v_holder
     --@citus where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash and b.job_id = v_holder
       for update;
    continue when not found;
    -- Bound to this call's own id: an earlier try of this call committed it (its reply was lost),
    -- and this retry waited for it. Nothing to decide again.
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
      if p_hold_until is not null then
        v_expires := 'infinity';
      end if;
      update workhorse.job j
         set queue = p_queue, type = p_type, payload = coalesce(p_payload, 'null'::jsonb),
             max_attempts = p_max_attempts, retry_policy = p_retry_policy, deadline = p_deadline,
             execution_timeout_ms = p_execution_timeout_ms, concurrency_key = p_concurrency_key, tags = p_tags,
             request_digest = v_rdigest, run_at = v_run_at, key_hold_until = p_hold_until,
             key_field_digests = case when p_hold_until is not null then p_digests end,
             state = case when v_run_at > now() then 'scheduled' else 'ready' end, updated_at = now()
             --@citus state = case when v_run_at > v_now then 'scheduled' else 'ready' end, updated_at = v_now
       where j.id = v_b.job_id;
       --@citus where j.bucket = p_bucket and j.id = v_b.job_id;
      update workhorse.key_binding b
         set field_digests = p_digests, request_digest = v_rdigest, expires_at = v_expires,
             -- preserve keeps the expiry, so the window it was counted with is the one that holds
             ttl_ms = case when p_schedule = 'preserve' then v_b.ttl_ms else p_window_ms end,
             schedule = p_schedule, max_wait_ms = v_max_wait, hold_until = p_hold_until
       where b.scope = p_scope and b.key_hash = p_key_hash;
       --@citus where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
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
           expires_at = v_key_due, schedule = p_schedule, max_wait_ms = p_max_wait_ms, hold_until = p_hold_until
     where b.scope = p_scope and b.key_hash = p_key_hash;
     --@citus where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
    v_bound := true;
    exit;
  end loop;
  if not v_bound then
    raise exception using errcode = '40001',
      message = 'workhorse: the debounce binding kept changing under this enqueue; retry it';
  end if;
  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
  --@citus insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at, trace_context,
                             key_hold_until, key_field_digests)
  values (p_id, p_queue, p_type, coalesce(p_payload, 'null'::jsonb), 'scheduled', v_due, p_max_attempts,
  --@citus values (p_bucket, p_id, p_queue, p_type, coalesce(p_payload, 'null'::jsonb), 'scheduled', v_due, p_max_attempts,
          p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags, p_scope, p_key_hash,
          'debounce', p_key_preview, p_key_length, p_window_ms, v_rdigest, v_due, p_trace_context,
          p_hold_until, case when p_hold_until is not null then p_digests end);
  job_id := p_id;
  outcome := 'accepted';
end $$;
