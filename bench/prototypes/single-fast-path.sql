-- Prototype B (bench database only): a single-request fast path in front of the batch decision.
--
-- The batch decision (now workhorse.enqueue_batch) builds composite-type arrays, unnests them
-- several times, calls check_conflicts, and PL/pgSQL re-plans most of those statements on every
-- call (custom plans: planning dominated a perf profile of the backend). A single request needs
-- none of that: one primary-key probe decides replay, and an accept is three plain INSERTs.
-- Same contract: same columns, same digests, same event, same WH409 (delegated), same race
-- handling (ON CONFLICT ... DO UPDATE ... WHERE expired; a lost race falls back to the batch path,
-- which reads the winner from a fresh snapshot, or raises 40001 under REPEATABLE READ).
alter function workhorse.enqueue(jsonb, boolean) rename to enqueue_batch;

create function workhorse.enqueue(p_requests jsonb, p_notify boolean)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, expires_at timestamptz)
language plpgsql
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
  r jsonb;
  v_payload jsonb;
  v_run_at timestamptz;
  v_id uuid;
  v_queue text;
  v_scope text;
  v_hash bytea;
  v_digests text[];
  v_digest text;
  v_ttl bigint;
  v_job uuid;
  v_mode text;
  v_stored text;
  v_expires timestamptz;
begin
  if jsonb_array_length(p_requests) <> 1 then
    return query select * from workhorse.enqueue_batch(p_requests, p_notify);
    return;
  end if;
  r := p_requests -> 0;
  if r ->> 'key_hash' is not null and r ->> 'mode' is distinct from 'idempotency' then
    return query select * from workhorse.enqueue_batch(p_requests, p_notify);
    return;
  end if;
  v_id := (r ->> 'id')::uuid;
  v_queue := r ->> 'queue';
  v_payload := coalesce(r -> 'payload', 'null'::jsonb);
  v_run_at := coalesce((r ->> 'run_at')::timestamptz, now());

  if r ->> 'key_hash' is not null then
    v_scope := r ->> 'scope';
    v_hash := decode(r ->> 'key_hash', 'hex');
    v_ttl := (r ->> 'ttl_ms')::bigint;
    select array_agg(d order by i) into v_digests
      from jsonb_array_elements_text(r -> 'field_digests') with ordinality as t(d, i);
    v_digests := v_digests[1:4] || left(encode(sha256(convert_to(v_payload::text, 'UTF8')), 'hex'), 16)
                 || v_digests[5:10];
    v_digest := encode(sha256(convert_to(array_to_string(v_digests, ','), 'UTF8')), 'hex');

    -- Replay: one primary-key probe, no lock, no write.
    select b.job_id, b.mode, b.request_digest, b.expires_at into v_job, v_mode, v_stored, v_expires
      from workhorse.idempotency_binding b
     where b.scope = v_scope and b.key_hash = v_hash and b.expires_at > now();
    if found then
      if v_stored = v_digest and v_mode = 'idempotency' then
        return query select 1, v_job, 'replayed'::text, v_digest, v_expires;
        return;
      end if;
      -- A conflict: the batch path builds the WH409 detail (fields, payload paths).
      return query select * from workhorse.enqueue_batch(p_requests, p_notify);
      return;
    end if;

    insert into workhorse.idempotency_binding as b
      (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
       created_at, expires_at)
    values (v_scope, v_hash, v_id, 'idempotency', r ->> 'key_preview', (r ->> 'key_length')::integer, v_digests,
            v_digest, v_ttl, now(), now() + v_ttl * interval '1 millisecond')
    on conflict (scope, key_hash) do update
      set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
          key_length = excluded.key_length, field_digests = excluded.field_digests,
          request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
          created_at = excluded.created_at, expires_at = excluded.expires_at
      where b.expires_at <= now()
    returning b.expires_at into v_expires;
    if not found then
      -- Someone bound the key after our probe; we hold its row lock. Decide from a fresh snapshot.
      return query select * from workhorse.enqueue_batch(p_requests, p_notify);
      return;
    end if;
  end if;

  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags)
  values (v_id, v_queue, r ->> 'type', v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end,
          v_run_at, (r ->> 'max_attempts')::integer, r -> 'retry_policy', (r ->> 'deadline')::timestamptz,
          (r ->> 'execution_timeout_ms')::bigint, r ->> 'concurrency_key',
          coalesce((select array_agg(t order by i) from jsonb_array_elements_text(r -> 'tags') with ordinality as x(t, i)), '{}'));

  insert into workhorse.job_event (job_id, kind, data)
  values (v_id, 'enqueued',
          case when v_hash is null then jsonb_build_object('queue', v_queue, 'runAt', v_run_at)
          else jsonb_build_object('queue', v_queue, 'runAt', v_run_at, 'mode', 'idempotency', 'scope', v_scope,
                                  'keyPreview', r ->> 'key_preview', 'keyDigest', left(r ->> 'key_hash', 12),
                                  'keyLength', (r ->> 'key_length')::integer, 'ttlMs', v_ttl,
                                  'expiresAt', v_expires, 'requestDigest', v_digest) end);

  if p_notify then
    perform pg_notify('workhorse_jobs', v_queue);
  end if;
  return query select 1, v_id, 'accepted'::text, v_digest, v_expires;
end $$;
