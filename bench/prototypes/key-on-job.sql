-- Prototype (measurement only, single-request path): the key lives on the job row, no binding row.
-- A unique index on (key_scope, key_hash) over jobs that hold their key replaces key_binding; the
-- fingerprint digests and the expiry move onto the job. An expired key is taken over by clearing the
-- old job's key (a second row write, rare). Same parameters as 006's enqueue_one, so the core's
-- client runs unchanged. Batches, purge and findBinding still use key_binding: accept/replay only.
alter table workhorse.job add column key_field_digests bytea, add column key_expires_at timestamptz;
create unique index job_key_idx on workhorse.job (key_scope, key_hash) where key_expires_at is not null;

create or replace function workhorse.enqueue_one(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
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
begin
  if p_key_hash is not null then
    v_digests := substring(p_field_digests from 1 for 32)
                 || substring(sha256(convert_to(v_payload::text, 'UTF8')) from 1 for 8)
                 || substring(p_field_digests from 33);
    v_rdigest := sha256(v_digests);
    for attempt in 1 .. 5 loop
      select j.id, j.key_mode, j.key_field_digests, j.request_digest, j.key_expires_at into v_live
        from workhorse.job j
       where j.key_scope = p_scope and j.key_hash = p_key_hash and j.key_expires_at is not null;
      if found and v_live.key_expires_at > now() then
        if v_live.request_digest = v_rdigest and v_live.key_mode = p_mode then
          job_id := v_live.id;
          outcome := 'replayed';
          request_digest := encode(v_rdigest, 'hex');
          return;
        end if;
        perform workhorse.raise_key_conflict(
          1, v_live.id, v_live.key_mode, v_live.key_field_digests, v_live.request_digest, p_mode, v_digests,
          v_rdigest, (select j.payload from workhorse.job j where j.id = v_live.id), v_payload);
      elsif found then
        update workhorse.job j set key_expires_at = null where j.id = v_live.id and j.key_expires_at <= now();
      end if;
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                                 key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at,
                                 key_field_digests, key_expires_at)
      values (p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end,
              v_run_at, p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags,
              p_scope, p_key_hash, p_mode, p_key_preview, p_key_length, p_ttl_ms, v_rdigest, p_run_at,
              v_digests, now() + p_ttl_ms * interval '1 millisecond')
      on conflict (key_scope, key_hash) where key_expires_at is not null do nothing;
      if found then
        job_id := p_id;
        outcome := 'accepted';
        return;
      end if;
    end loop;
    raise exception using errcode = '40001', message = 'workhorse: key kept changing; retry';
  end if;
  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags, enqueued_run_at)
  values (p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
          p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags, p_run_at);
  job_id := p_id;
  outcome := 'accepted';
end $$;
