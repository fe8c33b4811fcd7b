-- Retry recognition and one lock order (docs/enqueue.md, "Restarts and lost connections";
-- docs/decisions.md, "Lock order").
--
-- 1. A keyed call that the Queue retries after losing its connection proposes the same job ids
--    again. When the earlier try committed and only its reply was lost, the retry must answer what
--    that try decided and write nothing; it used to decide again, and a window shorter than the
--    retry's backoff (ttlMs 20, a throttle of 20 ms, a keyed batch) let it take over the expired
--    binding and insert the same job id (23505 on job_pkey), or a debounce retry rewrote a job that
--    another producer had replaced since. enqueue_one and enqueue_batch take `p_retry` (default
--    false; the client sets it from the second try on): a retry first looks for the job its own id
--    names. The paths that already read the binding also treat a binding that holds the proposed id
--    as the earlier try's (it committed while the retry waited for the binding's lock).
-- 2. enqueue_debounce locked the binding, then the job; purge, redrive (move_live_keys) and job
--    deletion lock the job, then the binding, and deadlocked with it. Every function now locks the
--    job first.
-- 3. enqueue_batch's debounce branch named the rolled-back job of an earlier request of the same
--    batch in a conflict's existingJobId; it is null now, as on the set-based path.

-- enqueue_debounce (009) with the job locked before the binding, and its own earlier try recognised.
create or replace function workhorse.enqueue_debounce(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_max_attempts integer, p_retry_policy jsonb,
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
  v_holder uuid;
begin
  for attempt in 1 .. 5 loop
    -- Lock order (docs/decisions.md, "Lock order"): the job, then its binding, as purge, redrive and
    -- job deletion take them. The binding is read first without a lock to learn its job.
    select b.job_id into v_holder
      from workhorse.key_binding b
     where b.scope = p_scope and b.key_hash = p_key_hash;
    if not found then
      insert into workhorse.key_binding
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at, schedule, max_wait_ms)
      values (p_scope, p_key_hash, p_id, 'debounce', p_key_preview, p_key_length, p_digests, v_rdigest, p_window_ms,
              now(), v_due, p_schedule, p_max_wait_ms)
      on conflict (scope, key_hash) do nothing;
      v_bound := found;
      exit when v_bound;
      -- Bound by another transaction after our snapshot: the next pass reads its row.
      continue;
    end if;

    -- Pending and never started: a retried or released job has started before. The job is locked
    -- first (a worker's claim, SKIP LOCKED, never takes it half-replaced), then the binding, so N
    -- racing requests on one key queue behind each other on the job.
    select j.state, j.run_at, j.attempt, j.started_at into v_j from workhorse.job j where j.id = v_holder for update;
    v_pending := found and v_j.state in ('scheduled', 'ready') and v_j.attempt = 0 and v_j.started_at is null;
    -- Locked only while it still names that job (READ COMMITTED rechecks the condition on the row's
    -- newest version): a binding released, or bound to another job, between the two reads is left
    -- unlocked and read again, so no binding lock is ever held while waiting for a job.
    select b.job_id, b.mode, b.expires_at, b.created_at, b.request_digest, b.max_wait_ms into v_b
      from workhorse.key_binding b
     where b.scope = p_scope and b.key_hash = p_key_hash and b.job_id = v_holder
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
      update workhorse.job j
         set queue = p_queue, type = p_type, payload = coalesce(p_payload, 'null'::jsonb),
             max_attempts = p_max_attempts, retry_policy = p_retry_policy, deadline = p_deadline,
             execution_timeout_ms = p_execution_timeout_ms, concurrency_key = p_concurrency_key, tags = p_tags,
             request_digest = v_rdigest, run_at = v_run_at,
             state = case when v_run_at > now() then 'scheduled' else 'ready' end, updated_at = now()
       where j.id = v_b.job_id;
      update workhorse.key_binding b
         set field_digests = p_digests, request_digest = v_rdigest, ttl_ms = p_window_ms, expires_at = v_expires,
             schedule = p_schedule, max_wait_ms = v_max_wait
       where b.scope = p_scope and b.key_hash = p_key_hash;
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
     where b.scope = p_scope and b.key_hash = p_key_hash;
    v_bound := true;
    exit;
  end loop;
  if not v_bound then
    raise exception using errcode = '40001',
      message = 'workhorse: the debounce binding kept changing under this enqueue; retry it';
  end if;
  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at)
  values (p_id, p_queue, p_type, coalesce(p_payload, 'null'::jsonb), 'scheduled', v_due, p_max_attempts,
          p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags, p_scope, p_key_hash,
          'debounce', p_key_preview, p_key_length, p_window_ms, v_rdigest, v_due);
  job_id := p_id;
  outcome := 'accepted';
end $$;

-- enqueue_one (009) with p_retry and the own-id check on the binding it reads.
drop function workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text,
                                    text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint);
create function workhorse.enqueue_one(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests bytea, p_notify boolean, p_schedule text default null,
  p_max_wait_ms bigint default null, p_retry boolean default false,
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
begin
  -- A retry of a call whose earlier try committed (its reply was lost): the job this very id names
  -- is that try's. Reported as a replay of the proposed id (the client says `accepted`); nothing
  -- is written. Only a retry looks (p_retry): the first try's path is unchanged.
  if p_retry and exists (select 1 from workhorse.job j where j.id = p_id) then
    job_id := p_id;
    outcome := 'replayed';
    return;
  end if;
  if p_mode = 'debounce' then
    select d.job_id, d.outcome, d.request_digest, d.reason into job_id, outcome, request_digest, reason
      from workhorse.enqueue_debounce(
             p_id, p_queue, p_type, v_payload, p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms,
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
      -- The binding live or not (the same primary-key probe): a binding that holds this call's own
      -- id was bound by an earlier try of it, which committed while this one waited for its lock.
      select b.job_id, b.mode, b.field_digests, b.request_digest, b.expires_at > now() as live into v_live
        from workhorse.key_binding b
       where b.scope = p_scope and b.key_hash = p_key_hash;
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
          1, v_live.job_id, v_live.mode, v_live.field_digests, v_live.request_digest, p_mode, v_digests,
          v_rdigest, (select j.payload from workhorse.job j where j.id = v_live.job_id), v_payload);
      end if;
      insert into workhorse.key_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      values (p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, v_digests, v_rdigest, p_ttl_ms,
              now(), now() + p_ttl_ms * interval '1 millisecond')
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= now() and b.job_id <> excluded.job_id;
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

  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at)
  values (p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
          p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags,
          p_scope, p_key_hash, p_mode, p_key_preview, p_key_length, p_ttl_ms, v_rdigest, p_run_at);
  if p_notify then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  job_id := p_id;
  outcome := 'accepted';
end $$;

-- What a batch's earlier try answered, read back from what it stored (enqueue_batch with p_retry,
-- once one of p_ids exists, so the whole try committed). Writes nothing. Per request, in input order:
--   its own proposed job exists: it created it (`replayed` of its own id; the client says accepted);
--   else a request of the batch for the same key created the job: that job, `replayed` /
--     `coalesced` (throttle) / `replaced` (debounce; `non_replaceable`, incompatible_key_mode, when
--     that job is not a debounce job);
--   else the key was bound before the batch: the job its binding names now (else, the binding gone,
--     the key's newest job), `replayed` / `coalesced`, or for debounce `replaced` when the job still
--     carries this request's digest (or is pending inside its window: replaced again since),
--     otherwise `non_replaceable` with the reason the job's state gives.
create function workhorse.enqueue_batch_recall(
  p_ids uuid[], p_modes text[], p_scopes text[], p_key_hashes bytea[], p_payloads jsonb, p_field_digests bytea[])
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, reason text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_made uuid[];
  r record;
  v_job uuid;
  v_in_batch boolean;
  v_bmode text;
  v_bexpires timestamptz;
  v_j record;
begin
  select coalesce(array_agg(u.id), '{}') into v_made
    from unnest(p_ids) u(id) where exists (select 1 from workhorse.job j where j.id = u.id);
  for r in
    select x.id, x.mode, x.scope, x.kh, x.o::integer as o,
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
        from workhorse.key_binding b where b.scope = r.scope and b.key_hash = r.kh;
      if v_job is null then
        select j.id into v_job from workhorse.job j
         where j.key_scope = r.scope and j.key_hash = r.kh order by j.created_at desc limit 1;
      end if;
      if v_job is null then
        raise exception 'workhorse: this batch committed on an earlier try, but request % has neither a binding nor a job for its key now', r.o;
      end if;
    end if;
    select j.key_mode, j.request_digest,
           j.state in ('scheduled', 'ready') and j.attempt = 0 and j.started_at is null as pending
      into v_j from workhorse.job j where j.id = v_job;
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
    elsif v_bexpires <= now() then
      outcome := 'non_replaceable';
      reason := 'window_elapsed_pending';
    else
      outcome := 'replaced';
    end if;
    return next;
  end loop;
end $$;

-- enqueue_batch (009) with p_retry, the own-id guard on a takeover, and a conflict with an earlier
-- request of the batch naming no job in the debounce branch too.
drop function workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[]);
create function workhorse.enqueue_batch(
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
  v_n integer := cardinality(p_ids);
  v_hashes bytea[] := p_key_hashes;
  v_done integer[] := '{}';
  v_ord integer[] := '{}';
  v_job uuid[] := '{}';
  v_out text[] := '{}';
  v_dig text[] := '{}';
  v_queues text[];
  p_ord integer[];
  p_job uuid[];
  p_out text[];
  p_dig text[];
  v_conflict boolean;
  v_pass integer := 0;
  v_rsn text[] := '{}';
  v_cur integer;
  v_one record;
  v_detail text;
  r record;
begin
  if p_legacy_key_hashes is not null then
    select array_agg(coalesce(
             (select b.key_hash from workhorse.key_binding b
               where u.l is not null and b.scope = u.s and b.key_hash = u.l and b.expires_at > now()
                 for key share), u.k) order by u.o)
      into v_hashes
      from unnest(p_scopes, p_key_hashes, p_legacy_key_hashes) with ordinality as u(s, k, l, o);
  end if;
  -- A retry of a batch whose earlier try committed (its reply was lost): a batch is atomic, so one
  -- proposed id that exists means the whole earlier try committed. Its answers are read back from
  -- what it stored; nothing is written. Only a retry looks (p_retry).
  if p_retry and exists (select 1 from workhorse.job j where j.id = any (p_ids)) then
    return query select * from workhorse.enqueue_batch_recall(p_ids, p_modes, p_scopes, v_hashes, p_payloads,
                                                             p_field_digests);
    return;
  end if;
  -- A batch holding a debounce request: each request in turn through enqueue_one (one statement per
  -- request, still one round trip), so a later request for a key sees what an earlier one did (a
  -- second debounce replaces the first one's job). Keys are visited in (scope, key_hash) order, input
  -- order within a key: the locks are taken in the same order as the set-based path takes them, and
  -- every key's requests are decided in input order. A conflict names its request's ordinal.
  if 'debounce' = any (p_modes) then
    begin
      for r in
        select x.*, (sum(x.tag_count) over (order by x.ord) - x.tag_count)::integer as tag_off
          from unnest(p_ids, p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                      p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_modes, p_scopes, v_hashes,
                      p_key_previews, p_key_lengths, p_ttls, p_field_digests, p_schedules, p_max_waits) with ordinality
               as x(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                    concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, schedule,
                    max_wait, ord)
         order by x.kh is null, x.scope, x.kh, x.ord
      loop
        v_cur := r.ord::integer;
        select o.job_id, o.outcome, o.request_digest, o.reason into v_one
          from workhorse.enqueue_one(
                 r.id, r.queue, r.type, p_payloads -> (r.ord::integer - 1), r.run_at, r.max_attempts, r.retry_policy,
                 r.deadline, r.execution_timeout_ms, r.concurrency_key,
                 coalesce(p_tags[r.tag_off + 1 : r.tag_off + r.tag_count], '{}'), r.mode, r.scope, r.kh,
                 r.key_preview, r.key_length, r.ttl_ms, r.fd, false, r.schedule, r.max_wait) o;
        v_ord := v_ord || v_cur;
        v_job := v_job || v_one.job_id;
        v_out := v_out || v_one.outcome;
        v_dig := v_dig || v_one.request_digest;
        v_rsn := v_rsn || v_one.reason;
        if v_one.outcome = 'accepted' then
          v_queues := array_append(coalesce(v_queues, '{}'), r.queue);
        end if;
      end loop;
    exception when sqlstate 'WH409' then
      get stacked diagnostics v_detail = pg_exception_detail;
      -- A conflict with an earlier request of this batch names no job: the one that request made
      -- rolls back with the batch (the set-based path below says null too).
      raise exception using errcode = 'WH409', message = 'workhorse: idempotency conflict',
        detail = jsonb_set(
          jsonb_set(v_detail::jsonb, '{ordinal}', to_jsonb(v_cur)), '{existingJobId}',
          case when (v_detail::jsonb ->> 'existingJobId')::uuid = any (p_ids) then 'null'::jsonb
               else v_detail::jsonb -> 'existingJobId' end)::text;
    end;
    if p_notify and v_queues is not null then
      perform pg_notify('workhorse_jobs', q) from (select distinct unnest(v_queues) as q) u;
    end if;
    return query
      select u.o, u.j, u.oc, u.d, u.rs
        from unnest(v_ord, v_job, v_out, v_dig, v_rsn) as u(o, j, oc, d, rs)
       order by u.o;
    return;
  end if;

  loop
    v_pass := v_pass + 1;
    with src as (
      select x.*, (sum(x.tag_count) over (order by x.ord) - x.tag_count)::integer as tag_off
        from unnest(p_ids, p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                    p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_modes, p_scopes, v_hashes,
                    p_key_previews, p_key_lengths, p_ttls, p_field_digests) with ordinality
             as x(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                  concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, ord)
    ),
    req as (
      select s.ord::integer as ordinal, s.id, s.queue, s.type, coalesce(p.v, 'null'::jsonb) as payload,
             coalesce(s.run_at, now()) as run_at, s.run_at as given_run_at, s.max_attempts, s.retry_policy,
             s.deadline, s.execution_timeout_ms, s.concurrency_key,
             coalesce(p_tags[s.tag_off + 1 : s.tag_off + s.tag_count], '{}') as tags,
             s.mode, s.scope, s.kh, s.key_preview, s.key_length, s.ttl_ms, d.digests, sha256(d.digests) as rdigest
        from src s
        left join lateral (select p_payloads -> (s.ord::integer - 1) as v) p on true
       cross join lateral (
          select case when s.kh is not null then
                   substring(s.fd from 1 for 32)
                   || substring(sha256(convert_to(coalesce(p.v, 'null'::jsonb)::text, 'UTF8')) from 1 for 8)
                   || substring(s.fd from 33)
                 end as digests) d
       where not (s.ord::integer = any (v_done))
    ),
    -- Each keyed request with its batch leader (first request for the key) and the key's live owner,
    -- found by one primary-key probe per request (LATERAL .. LIMIT 1 keeps it a probe, never a scan).
    -- The batch leader of each key by hash aggregation: no sort of the (wide) request rows.
    lead as (
      select r.scope, r.kh, min(r.ordinal) as lead_ordinal
        from req r where r.kh is not null group by r.scope, r.kh
    ),
    seen as (
      select r.*, l.lead_ordinal, lr.id as lead_id, lr.rdigest as lead_rdigest, lr.mode as lead_mode,
             b.job_id as live_job_id, b.mode as live_mode, b.field_digests as live_digests,
             b.request_digest as live_rdigest
        from req r
        left join lead l on l.scope = r.scope and l.kh = r.kh
        left join req lr on lr.ordinal = l.lead_ordinal
        left join lateral (
          select b.job_id, b.mode, b.field_digests, b.request_digest
            from workhorse.key_binding b
           where b.scope = r.scope and b.key_hash = r.kh and b.expires_at > now()
           limit 1) b on true
    ),
    claimed as (
      insert into workhorse.key_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      select s.scope, s.kh, s.id, s.mode, s.key_preview, s.key_length, s.digests, s.rdigest, s.ttl_ms,
             now(), now() + s.ttl_ms * interval '1 millisecond'
        from seen s
       where s.kh is not null and s.ordinal = s.lead_ordinal and s.live_job_id is null
       order by s.scope, s.kh
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= now() and b.job_id <> excluded.job_id
      returning b.job_id
    ),
    jobs as (
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                                 key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at)
      select s.id, s.queue, s.type, s.payload, case when s.run_at > now() then 'scheduled' else 'ready' end,
             s.run_at, s.max_attempts, s.retry_policy, s.deadline, s.execution_timeout_ms, s.concurrency_key, s.tags,
             s.scope, s.kh, s.mode, s.key_preview, s.key_length, s.ttl_ms, s.rdigest, s.given_run_at
        from seen s
       where s.kh is null or s.id in (select c.job_id from claimed c)
      returning id, queue
    ),
    decided as (
      select s.ordinal, s.kh, s.rdigest,
             case when s.kh is null then s.id
                  when s.live_job_id is not null then s.live_job_id
                  when s.lead_id in (select c.job_id from claimed c) then s.lead_id end as job_id,
             case when s.kh is null then 'accepted'
                  when s.live_job_id is not null then
                    case when s.mode = 'throttle' then 'coalesced' else 'replayed' end
                  when s.lead_id in (select c.job_id from claimed c) then
                    case when s.ordinal = s.lead_ordinal then 'accepted'
                         when s.mode = 'throttle' then 'coalesced' else 'replayed' end
                  else 'retry' end as outcome,
             -- Differs from the key's owner: the live binding, else the batch leader.
             s.kh is not null and (
               case when s.live_job_id is not null then s.live_rdigest <> s.rdigest or s.live_mode <> s.mode
                    else s.lead_rdigest <> s.rdigest or s.lead_mode <> s.mode end) as differs,
             s.live_job_id, s.live_mode, s.live_digests, s.live_rdigest, s.lead_ordinal, s.lead_mode,
             s.lead_rdigest, s.mode, s.digests, s.payload
        from seen s
    )
    select array_agg(d.ordinal order by d.ordinal), array_agg(d.job_id order by d.ordinal),
           array_agg(d.outcome order by d.ordinal),
           array_agg(case when d.outcome in ('replayed', 'coalesced') then encode(d.rdigest, 'hex') end
                     order by d.ordinal),
           (select array_agg(distinct j.queue) from jobs j),
           (select workhorse.raise_key_conflict(
                     f.ordinal, f.live_job_id, coalesce(f.live_mode, f.lead_mode),
                     coalesce(f.live_digests, (select l.digests from req l where l.ordinal = f.lead_ordinal)),
                     coalesce(f.live_rdigest, f.lead_rdigest),
                     f.mode, f.digests, f.rdigest,
                     case when f.live_job_id is not null
                          then (select j.payload from workhorse.job j where j.id = f.live_job_id)
                          else (select l.payload from req l where l.ordinal = f.lead_ordinal) end,
                     f.payload)
              from decided f where f.differs order by f.ordinal limit 1)
      into p_ord, p_job, p_out, p_dig, v_queues, v_conflict
      from decided d;

    if p_notify and v_queues is not null then
      perform pg_notify('workhorse_jobs', q) from unnest(v_queues) q;
    end if;

    -- The usual case: one pass decided everything (the arrays are already in ordinal order).
    if v_pass = 1 and not ('retry' = any (p_out)) then
      return query select u.*, null::text from unnest(p_ord, p_job, p_out, p_dig) u;
      return;
    end if;

    -- Keep what this pass decided; run again only for requests that lost a race.
    select array_agg(u.o order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.j order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.oc order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.d order by u.o) filter (where u.oc <> 'retry')
      into p_ord, p_job, p_out, p_dig
      from unnest(p_ord, p_job, p_out, p_dig) as u(o, j, oc, d);
    v_ord := v_ord || coalesce(p_ord, '{}');
    v_job := v_job || coalesce(p_job, '{}');
    v_out := v_out || coalesce(p_out, '{}');
    v_dig := v_dig || coalesce(p_dig, '{}');
    v_done := v_ord;
    exit when cardinality(v_ord) = v_n;
    if v_pass >= 5 then
      raise exception using errcode = '40001',
        message = 'workhorse: idempotency bindings kept changing under this enqueue; retry it';
    end if;
  end loop;

  return query
    select u.o, u.j, u.oc, u.d, null::text
      from unnest(v_ord, v_job, v_out, v_dig) as u(o, j, oc, d)
     order by u.o;
end $$;
