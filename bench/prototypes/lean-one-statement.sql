-- Prototype: enqueue_one as one statement (probe, binding, job, answer) with every bound checked in it.
create or replace function workhorse.enqueue_bound_violation(
  p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer, p_deadline timestamptz,
  p_execution_timeout_ms bigint, p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text,
  p_key_length integer, p_ttl_ms bigint, p_field_digests bytea, p_trace_context text)
returns boolean language plpgsql as $$
begin
  raise exception using errcode = '23514', message = 'workhorse: a request field is out of bounds';
end $$;

create or replace function workhorse.enqueue_one(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests bytea, p_notify boolean, p_schedule text default null,
  p_max_wait_ms bigint default null, p_retry boolean default false, p_trace_context text default null,
  out job_id uuid, out outcome text, out request_digest text, out reason text)
language plpgsql as $$
#variable_conflict use_variable
begin
  if p_mode = 'debounce' then
    select d.job_id, d.outcome, d.request_digest, d.reason into job_id, outcome, request_digest, reason
      from workhorse.enqueue_debounce(
             p_id, p_queue, p_type, coalesce(p_payload, 'null'::jsonb), p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms,
             p_concurrency_key, p_tags, p_scope, p_key_hash, p_key_preview, p_key_length, p_ttl_ms,
             substring(p_field_digests from 1 for 32)
             || substring(sha256(convert_to(coalesce(p_payload, 'null'::jsonb)::text, 'UTF8')) from 1 for 8)
             || substring(p_field_digests from 33),
             coalesce(p_schedule, 'reset'), p_max_wait_ms, p_notify, p_trace_context) d;
    return;
  end if;
  for attempt in 1 .. 5 loop
    with req as (
      select coalesce(p_payload, 'null'::jsonb) as payload, coalesce(p_run_at, now()) as run_at, d.digests,
             sha256(d.digests) as rdigest
        from (select case when p_key_hash is not null then
                substring(p_field_digests from 1 for 32)
                || substring(sha256(convert_to(coalesce(p_payload, 'null'::jsonb)::text, 'UTF8')) from 1 for 8)
                || substring(p_field_digests from 33) end as digests) d
       where (char_length(p_queue) between 1 and 128 and p_queue !~ '[[:cntrl:]]'
              and char_length(p_type) between 1 and 128 and p_type !~ '[[:cntrl:]]'
              and p_max_attempts between 1 and 1000
              and (p_execution_timeout_ms is null or p_execution_timeout_ms between 1 and 31536000000)
              and cardinality(p_tags) <= 32
              and (p_deadline is null or p_deadline > coalesce(p_run_at, now()))
              and (p_trace_context is null or length(p_trace_context) <= 256)
              and not coalesce(p_payload @? 'strict $.**{100}?(@.type() == "object" || @.type() == "array")', false)
              and (p_key_hash is null
                   or (p_mode in ('idempotency', 'throttle') and octet_length(p_scope) between 1 and 256
                       and octet_length(p_key_hash) = 32 and char_length(p_key_preview) between 1 and 9
                       and p_key_length between 1 and 512 and p_ttl_ms between 1 and 31536000000
                       and octet_length(p_field_digests) = 80)))
          or workhorse.enqueue_bound_violation(p_queue, p_type, p_payload, p_run_at, p_max_attempts, p_deadline,
               p_execution_timeout_ms, p_tags, p_mode, p_scope, p_key_hash, p_key_preview, p_key_length, p_ttl_ms,
               p_field_digests, p_trace_context)
    ),
    earlier as (select 1 from workhorse.job j where p_retry and j.id = p_id),
    live as (
      select b.job_id, b.mode, b.field_digests, b.request_digest, b.expires_at > now() as live
        from workhorse.key_binding b
       where p_key_hash is not null and b.scope = p_scope and b.key_hash = p_key_hash
    ),
    bound as (
      insert into workhorse.key_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      select p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, r.digests, r.rdigest, p_ttl_ms,
             now(), now() + p_ttl_ms * interval '1 millisecond'
        from req r
       where p_key_hash is not null and not exists (select from earlier)
         and not exists (select from live l where l.live or l.job_id = p_id)
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= now() and b.job_id <> excluded.job_id
      returning 1
    ),
    added as (
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                                 key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at, trace_context)
      select p_id, p_queue, p_type, r.payload, case when r.run_at > now() then 'scheduled' else 'ready' end, r.run_at,
             p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags,
             p_scope, p_key_hash, p_mode, p_key_preview, p_key_length, p_ttl_ms, r.rdigest, p_run_at, p_trace_context
        from req r
       where not exists (select from earlier) and (p_key_hash is null or exists (select from bound))
      returning 1
    )
    select case when exists (select from earlier) or exists (select from added) then p_id else l.job_id end,
           case when exists (select from earlier) then 'replayed'
                when exists (select from added) then 'accepted'
                when l.job_id = p_id then 'replayed'
                when not l.live then null
                when l.request_digest = r.rdigest and l.mode = p_mode then
                  case when p_mode = 'throttle' then 'coalesced' else 'replayed' end
                when workhorse.raise_key_conflict(
                       1, l.job_id, l.mode, l.field_digests, l.request_digest, p_mode, r.digests, r.rdigest,
                       (select j.payload from workhorse.job j where j.id = l.job_id), r.payload) then null
           end,
           case when l.live and l.job_id <> p_id and not exists (select from added) then encode(r.rdigest, 'hex') end
      into job_id, outcome, request_digest
      from req r left join live l on true;
    if outcome is not null then
      if outcome = 'accepted' and p_notify then
        perform pg_notify('workhorse_jobs', p_queue);
      end if;
      return;
    end if;
    -- Another transaction bound the key after this statement's snapshot: the next pass reads it.
  end loop;
  raise exception using errcode = '40001',
    message = 'workhorse: the idempotency binding kept changing under this enqueue; retry it';
end $$;
