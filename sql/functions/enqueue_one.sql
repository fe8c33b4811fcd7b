-- On Citus, the marks make workhorse.enqueue_one_at instead (this function stays as it is beside it):
-- the decision on the shard of p_bucket (the key's bucket, or the unkeyed job id's), delegated to the
-- node that holds it (create_distributed_function below), so every statement inside is a local read
-- or write of that one shard; p_ordinal names the request in a conflict (enqueue_batch calls it once
-- per request). Its old signatures are dropped instead of enqueue_one's.
--@citus-file enqueue_one_at
--@citus+ drop function if exists workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb,
--@citus+   timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint);
--@citus+ drop function if exists workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb,
--@citus+   timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean);
--@citus+ drop function if exists workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb,
--@citus+   timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean, text);
-- The signatures before migrations 006, 009, 013, 018 (no p_trace_context) and 026 (no p_hold_until),
-- in that order: CREATE OR REPLACE cannot change or add an argument, so an installation made before
-- one of them loses the old function here.
drop function if exists workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, --@single
                                    text[], text, text, bytea, text, integer, bigint, text[], boolean); --@single
drop function if exists workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, --@single
                                    text[], text, text, bytea, text, integer, bigint, bytea, boolean); --@single
drop function if exists workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, --@single
                                    text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint); --@single
drop function if exists workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, --@single
                                    text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean); --@single
drop function if exists workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, --@single
                                    text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean, --@single
                                    text); --@single

-- p_trace_context: the producer's W3C traceparent (or null), stored on the job it accepts.
-- p_hold_until: the key's lifetime ('finished' | 'started', docs/enqueue.md "Key lifetimes"), or null;
-- with one, p_ttl_ms may be null (no time limit). Last, so clients that predate it call as before.
create or replace function workhorse.enqueue_one(
--@citus create or replace function workhorse.enqueue_one_at(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  --@citus p_bucket integer, p_ordinal integer, p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests bytea, p_notify boolean, p_schedule text default null,
  --@citus p_ttl_ms bigint, p_field_digests bytea, p_notify boolean, p_schedule text, p_max_wait_ms bigint, p_retry boolean,
  p_max_wait_ms bigint default null, p_retry boolean default false, p_trace_context text default null,
  --@citus p_trace_context text default null, p_hold_until text default null,
  p_hold_until text default null, out job_id uuid, out outcome text, out request_digest text, out reason text)
  --@citus out job_id uuid, out outcome text, out request_digest text, out reason text)
language plpgsql as $$
#variable_conflict use_variable
declare
  v_payload jsonb := coalesce(p_payload, 'null'::jsonb);
  v_run_at timestamptz := coalesce(p_run_at, now());
  v_computed bytea;
  v_digests bytea;
  v_full bytea;
  v_rdigest bytea;
  v_live record;
  v_bound boolean := false;
  --@citus+ v_now timestamptz := now();
begin
  -- A retry of a call whose earlier try committed (its reply was lost): the job this very id names
  -- is that try's. Reported as a replay of the proposed id (the client says `accepted`); nothing
  -- is written. Only a retry looks (p_retry): the first try's path is unchanged.
  if p_retry and exists (select 1 from workhorse.job j where j.id = p_id) then
  --@citus if p_retry and exists (select 1 from workhorse.job j where j.bucket = p_bucket and j.id = p_id) then
    job_id := p_id;
    outcome := 'replayed';
    return;
  end if;
  -- The bounds a client could get wrong (docs/enqueue.md, "Key lifetimes"): only a lifetime may go
  -- without a TTL, and throttle has none.
  if p_key_hash is not null and (p_ttl_ms is null or p_hold_until is not null)
     and (p_hold_until is null or p_mode = 'throttle') then
    raise exception using errcode = '22023',
      message = 'workhorse: a key needs a TTL unless it is held until its job finishes or starts (not with throttle)';
  end if;
  -- A lifetime without a key holds nothing and is not stored, but it is still checked: bad input is
  -- refused the same way with or without a key (hold_until_digest casts it to its domain).
  if p_key_hash is null and p_hold_until is not null then
    perform workhorse.hold_until_digest(p_hold_until);
  end if;
  -- The request's field digests, from the values this statement carries (request_field_digests.sql):
  -- digests a client sent are only checked against them (WH422 when they differ).
  if p_key_hash is not null then
    v_computed := workhorse.request_field_digests(p_queue, p_type, v_payload, p_run_at, p_max_attempts, p_retry_policy,
                                                  p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags, p_ttl_ms);
    v_digests := workhorse.verified_field_digests(1, p_field_digests, v_computed);
    --@citus v_digests := workhorse.verified_field_digests(p_ordinal, p_field_digests, v_computed);
  end if;
  if p_mode = 'debounce' then
    select d.job_id, d.outcome, d.request_digest, d.reason into job_id, outcome, request_digest, reason
      from workhorse.enqueue_debounce(
      --@citus from workhorse.enqueue_debounce_at(
             p_id, p_queue, p_type, v_payload, p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms,
             --@citus p_bucket, p_id, p_queue, p_type, v_payload, p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms,
             p_concurrency_key, p_tags, p_scope, p_key_hash, p_key_preview, p_key_length, p_ttl_ms,
             v_digests,
             coalesce(p_schedule, 'reset'), p_max_wait_ms, p_notify, p_trace_context, p_hold_until) d;
    return;
  end if;
  if p_key_hash is not null then
    v_full := v_digests || workhorse.hold_until_digest(p_hold_until);
    v_rdigest := sha256(v_full);
    for attempt in 1 .. 5 loop
      -- The binding live or not (the same primary-key probe): a binding that holds this call's own
      -- id was bound by an earlier try of it, which committed while this one waited for its lock.
      select b.job_id, b.mode, b.field_digests, b.request_digest, b.hold_until, b.expires_at > now() as live
      --@citus select b.job_id, b.mode, b.field_digests, b.request_digest, b.hold_until, b.expires_at > v_now as live
        into v_live
        from workhorse.key_binding b
       where b.scope = p_scope and b.key_hash = p_key_hash;
       --@citus where b.bucket = p_bucket and b.scope = p_scope and b.key_hash = p_key_hash;
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
          1, v_live.job_id, v_live.mode, v_live.field_digests || workhorse.hold_until_digest(v_live.hold_until),
          --@citus p_ordinal, v_live.job_id, v_live.mode, v_live.field_digests || workhorse.hold_until_digest(v_live.hold_until),
          v_live.request_digest, p_mode, v_full, v_rdigest, (select j.payload from workhorse.job j where j.id = v_live.job_id), v_payload);
          --@citus v_live.request_digest, p_mode, v_full, v_rdigest, (select j.payload from workhorse.job j where j.bucket = p_bucket and j.id = v_live.job_id), v_payload);
      end if;
      insert into workhorse.key_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
        --@citus (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at, hold_until)
      values (p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, v_digests, v_rdigest, p_ttl_ms,
      --@citus values (p_bucket, p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, v_digests, v_rdigest, p_ttl_ms,
              now(), coalesce(now() + p_ttl_ms * interval '1 millisecond', 'infinity'), p_hold_until)
      on conflict (scope, key_hash) do update
      --@citus on conflict (bucket, scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at, hold_until = excluded.hold_until
        where b.expires_at <= now() and b.job_id <> excluded.job_id;
        --@citus where b.expires_at <= v_now and b.job_id <> excluded.job_id; -- Citus: no now() in ON CONFLICT .. WHERE
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
  --@citus insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                             key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at, trace_context,
                             key_hold_until, key_field_digests)
  values (p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
  --@citus values (p_bucket, p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
          p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags,
          p_scope, p_key_hash, p_mode, p_key_preview, p_key_length, p_ttl_ms, v_rdigest, p_run_at, p_trace_context,
          case when p_key_hash is not null then p_hold_until end,
          case when p_hold_until is not null then v_digests end);
  if p_notify then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  job_id := p_id;
  outcome := 'accepted';
end $$;
--@citus+ select create_distributed_function(
--@citus+   'workhorse.enqueue_one_at(integer, integer, uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text, text[], text, text, bytea, text, integer, bigint, bytea, boolean, text, bigint, boolean, text, text)',
--@citus+   'p_bucket', colocate_with => 'workhorse.job');
