-- Workhorse schema: jobs, idempotency bindings, job events, enqueue observations, operator audit.
-- Runs on PostgreSQL 14..18: gen_random_uuid() and sha256() are core since 13/11; nothing newer.

create table workhorse.job (
  id                   uuid primary key,  -- UUIDv7 from the client: time-ordered, so the pk serves "newest first"
  queue                text not null check (char_length(queue) between 1 and 128 and queue !~ '[[:cntrl:]]'),
  type                 text not null check (char_length(type) between 1 and 128 and type !~ '[[:cntrl:]]'),
  payload              jsonb not null,
  state                text not null check (state in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged')),
  run_at               timestamptz not null,
  attempt              integer not null default 0 check (attempt >= 0),
  max_attempts         integer not null check (max_attempts between 1 and 1000),
  retry_policy         jsonb,
  deadline             timestamptz,
  execution_timeout_ms bigint check (execution_timeout_ms between 1 and 31536000000),
  concurrency_key      text,
  tags                 text[] not null default '{}' check (cardinality(tags) <= 32),
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  lease_owner          text,
  lease_expires_at     timestamptz,
  started_at           timestamptz,
  finished_at          timestamptz,
  result               jsonb,
  last_error           jsonb,
  purged_at            timestamptz,
  purged_by            text,
  purge_reason         text,
  check (deadline is null or deadline > run_at)
);

-- Claiming and per-queue purge read only pending jobs; a partial index stays small.
create index job_pending_idx on workhorse.job (queue, run_at) where state in ('scheduled', 'ready');
-- Expired leases are found without scanning finished jobs.
create index job_lease_idx on workhorse.job (lease_expires_at) where state = 'active';

create table workhorse.idempotency_binding (
  scope          text not null check (octet_length(scope) between 1 and 256),
  key_hash       bytea not null check (octet_length(key_hash) = 32),
  job_id         uuid not null,
  mode           text not null check (mode in ('idempotency', 'debounce', 'throttle')),
  key_preview    text not null check (char_length(key_preview) between 1 and 9),
  key_length     integer not null check (key_length between 1 and 512),
  field_digests  text[] not null,
  request_digest text not null check (char_length(request_digest) = 64),
  ttl_ms         bigint not null check (ttl_ms between 1 and 31536000000),
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  primary key (scope, key_hash)
);
create index idempotency_binding_job_idx on workhorse.idempotency_binding (job_id);
create index idempotency_binding_expires_idx on workhorse.idempotency_binding (expires_at);

-- No foreign key from binding to job: the RI check would take a KEY SHARE row lock on every new job
-- (an extra WAL record on the hot path). The same guarantee, "no key is held by a job that does not
-- exist", comes from these triggers, which fire only when jobs are deleted.
create function workhorse.job_deleted() returns trigger language plpgsql as $$
begin
  delete from workhorse.idempotency_binding b using deleted_jobs d where b.job_id = d.id;
  return null;
end $$;
create trigger job_deleted_release_bindings after delete on workhorse.job
  referencing old table as deleted_jobs for each statement execute function workhorse.job_deleted();

create function workhorse.job_truncated() returns trigger language plpgsql as $$
begin
  truncate workhorse.idempotency_binding;
  return null;
end $$;
create trigger job_truncated_release_bindings after truncate on workhorse.job
  for each statement execute function workhorse.job_truncated();

create table workhorse.job_event (
  job_id uuid not null,
  seq    bigint generated always as identity,
  at     timestamptz not null default now(),
  kind   text not null,
  data   jsonb,
  primary key (job_id, seq)
);

create table workhorse.enqueue_observation (
  id                      bigint generated always as identity primary key,
  at                      timestamptz not null,
  outcome                 text not null check (outcome in ('replayed', 'conflict', 'coalesced', 'non_replaceable')),
  reason                  text,
  queue                   text not null,
  type                    text not null,
  scope                   text not null,
  key_preview             text not null,
  key_digest              text not null,
  key_length              integer not null,
  job_id                  uuid,
  conflicting_fields      text[],
  payload_paths           text[],
  stored_request_digest   text,
  rejected_request_digest text,
  source                  text
);
create index enqueue_observation_at_idx on workhorse.enqueue_observation (at);

create table workhorse.operator_audit (
  id     uuid primary key default gen_random_uuid(),
  at     timestamptz not null default now(),
  actor  text not null,
  action text not null,
  target text not null,
  reason text,
  result jsonb not null
);
create index operator_audit_at_idx on workhorse.operator_audit (at);

create table workhorse.maintenance_run (
  id       uuid primary key default gen_random_uuid(),
  task     text not null,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  removed  bigint not null,
  trigger  text not null
);
create index maintenance_run_task_idx on workhorse.maintenance_run (task, started_at);

-- Paths (never values) at which two JSON documents differ, e.g. {$.amount, $.items[2].sku}.
create function workhorse.jsonb_diff_paths(a jsonb, b jsonb, path text default '$')
returns text[] language plpgsql immutable as $$
declare
  out text[] := '{}';
  k text;
  i integer;
  seg text;
begin
  if a is not distinct from b then
    return out;
  end if;
  if jsonb_typeof(a) = 'object' and jsonb_typeof(b) = 'object' then
    for k in select x from (select jsonb_object_keys(a) x union select jsonb_object_keys(b)) s order by 1 loop
      seg := case when k ~ '^[A-Za-z_][A-Za-z0-9_]*$' then path || '.' || k else path || '[' || to_json(k)::text || ']' end;
      if not (a ? k) or not (b ? k) then
        out := out || seg;
      else
        out := out || workhorse.jsonb_diff_paths(a -> k, b -> k, seg);
      end if;
    end loop;
    return out;
  elsif jsonb_typeof(a) = 'array' and jsonb_typeof(b) = 'array' then
    for i in 0 .. greatest(jsonb_array_length(a), jsonb_array_length(b)) - 1 loop
      if i >= jsonb_array_length(a) or i >= jsonb_array_length(b) then
        out := out || (path || '[' || i || ']');
      else
        out := out || workhorse.jsonb_diff_paths(a -> i, b -> i, path || '[' || i || ']');
      end if;
    end loop;
    return out;
  end if;
  return array[path];
end $$;

-- One parsed request of a batch. field_digests follows workhorse.fingerprint_fields().
create type workhorse.enqueue_request as (
  ordinal              integer,
  id                   uuid,
  queue                text,
  type                 text,
  payload              jsonb,
  run_at               timestamptz,
  max_attempts         integer,
  retry_policy         jsonb,
  deadline             timestamptz,
  execution_timeout_ms bigint,
  concurrency_key      text,
  tags                 text[],
  mode                 text,
  scope                text,
  key_hash             bytea,
  key_preview          text,
  key_length           integer,
  ttl_ms               bigint,
  field_digests        text[],
  request_digest       text
);

-- One distinct scoped key of a batch and who owns it.
create type workhorse.enqueue_key as (
  scope          text,
  key_hash       bytea,
  lead_ordinal   integer,
  job_id         uuid,
  mode           text,
  field_digests  text[],
  request_digest text,
  expires_at     timestamptz,
  status         text  -- live: bound before this call; claim: to be taken; won: taken by this call
);

create function workhorse.fingerprint_fields() returns text[] language sql immutable as $$
  select array['concurrencyKey', 'deadline', 'executionTimeoutMs', 'maxAttempts', 'payload', 'queue',
               'retryPolicy', 'runAt', 'tags', 'ttlMs', 'type']
$$;

-- Raises WH409 (idempotency conflict) for the first keyed request, in input order, whose fingerprint
-- differs from the one that owns its key. The detail is JSON; the client names the fields.
create function workhorse.check_conflicts(p_req workhorse.enqueue_request[], p_keys workhorse.enqueue_key[])
returns void language plpgsql as $$
declare
  c record;
  v_fields text[];
  v_stored_payload jsonb;
  v_paths text[];
begin
  select r.ordinal, r.payload, r.field_digests as rd, r.request_digest as rrd, r.mode as rmode,
         k.job_id, k.field_digests as kd, k.request_digest as krd, k.mode as kmode, k.status, k.lead_ordinal
    into c
    from unnest(p_req) r
    join unnest(p_keys) k on k.scope = r.scope and k.key_hash = r.key_hash
   where r.request_digest <> k.request_digest or r.mode <> k.mode
   order by r.ordinal
   limit 1;
  if not found then
    return;
  end if;
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields(), c.rd, c.kd) as f(name, a, b)
   where f.a is distinct from f.b;
  if c.rmode <> c.kmode then
    v_fields := array_append(v_fields, 'mode');
  end if;
  if 'payload' = any (v_fields) then
    if c.status = 'claim' then
      select r.payload into v_stored_payload from unnest(p_req) r where r.ordinal = c.lead_ordinal;
    else
      select j.payload into v_stored_payload from workhorse.job j where j.id = c.job_id;
    end if;
    v_paths := workhorse.jsonb_diff_paths(v_stored_payload, c.payload);
  end if;
  raise exception using
    errcode = 'WH409',
    message = 'workhorse: idempotency conflict',
    detail = jsonb_build_object(
      'ordinal', c.ordinal,
      'existingJobId', c.job_id,
      'existingMode', c.kmode,
      'conflictingFields', to_jsonb(v_fields),
      'payloadPaths', to_jsonb(v_paths),
      'storedRequestDigest', c.krd,
      'rejectedRequestDigest', c.rrd)::text;
end $$;

-- The enqueue decision for a batch of 1..1000 requests, in one call.
--   p_requests: jsonb array of objects with the fields of workhorse.enqueue_request (key_hash as hex,
--               field_digests without the payload slot, which is computed here from canonical jsonb).
--   p_notify:   pg_notify('workhorse_jobs', queue) for new jobs inside this transaction.
-- Returns one row per request: ordinal, job_id, outcome ('accepted' | 'replayed'), request_digest,
-- expires_at (of the binding). Raises WH409 on a conflict; nothing it wrote survives that.
-- Replays read only: no row locks, no writes, no notification.
create function workhorse.enqueue(p_requests jsonb, p_notify boolean)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, expires_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_req workhorse.enqueue_request[];
  v_keys workhorse.enqueue_key[];
  v_won uuid[];
  v_queues text[];
  v_lost integer;
begin
  select array_agg(row(x.ordinal, x.id, x.queue, x.type, coalesce(x.payload, 'null'::jsonb), coalesce(x.run_at, now()), x.max_attempts,
                       x.retry_policy, x.deadline, x.execution_timeout_ms, x.concurrency_key, x.tags, x.mode,
                       x.scope, decode(x.key_hash, 'hex'), x.key_preview, x.key_length, x.ttl_ms, d.digests,
                       case when d.digests is not null
                            then encode(sha256(convert_to(array_to_string(d.digests, ','), 'UTF8')), 'hex') end
                   )::workhorse.enqueue_request order by x.ordinal)
    into v_req
    from jsonb_to_recordset(p_requests) as x(
           ordinal integer, id uuid, queue text, type text, payload jsonb, run_at timestamptz,
           max_attempts integer, retry_policy jsonb, deadline timestamptz, execution_timeout_ms bigint,
           concurrency_key text, tags text[], mode text, scope text, key_hash text, key_preview text,
           key_length integer, ttl_ms bigint, field_digests text[])
    cross join lateral (
      select case when x.key_hash is not null then
               x.field_digests[1:4]
               || left(encode(sha256(convert_to(coalesce(x.payload, 'null'::jsonb)::text, 'UTF8')), 'hex'), 16)
               || x.field_digests[5:10]
             end as digests
    ) d;

  -- Distinct keys in (scope, key_hash) order, each with its owner as of this snapshot. Plain reads:
  -- a replay must not lock or write anything.
  select array_agg(row(l.scope, l.key_hash, l.ordinal,
                       case when b.expires_at > now() then b.job_id else l.id end,
                       case when b.expires_at > now() then b.mode else l.mode end,
                       case when b.expires_at > now() then b.field_digests else l.field_digests end,
                       case when b.expires_at > now() then b.request_digest else l.request_digest end,
                       case when b.expires_at > now() then b.expires_at
                            else now() + l.ttl_ms * interval '1 millisecond' end,
                       case when b.expires_at > now() then 'live' else 'claim' end
                   )::workhorse.enqueue_key order by l.scope, l.key_hash)
    into v_keys
    from (select distinct on (r.scope, r.key_hash) r.*
            from unnest(v_req) r
           where r.key_hash is not null
           order by r.scope, r.key_hash, r.ordinal) l
    left join workhorse.idempotency_binding b on b.scope = l.scope and b.key_hash = l.key_hash;

  perform workhorse.check_conflicts(v_req, v_keys);

  if exists (select 1 from unnest(v_req) r where r.key_hash is null)
     or exists (select 1 from unnest(v_keys) k where k.status = 'claim') then
    -- Take free or expired keys in sorted order, so overlapping batches queue up instead of deadlocking.
    -- A key that turned live since the snapshot is locked by ON CONFLICT but not updated, and is
    -- resolved below from a fresh snapshot.
    with claimed as (
      insert into workhorse.idempotency_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      select r.scope, r.key_hash, r.id, r.mode, r.key_preview, r.key_length, r.field_digests, r.request_digest,
             r.ttl_ms, now(), now() + r.ttl_ms * interval '1 millisecond'
        from unnest(v_keys) k
        join unnest(v_req) r on r.ordinal = k.lead_ordinal
       where k.status = 'claim'
       order by k.scope, k.key_hash
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= now()
      returning b.job_id, b.expires_at
    ),
    new_jobs as (
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags)
      select r.id, r.queue, r.type, r.payload, case when r.run_at > now() then 'scheduled' else 'ready' end,
             r.run_at, r.max_attempts, r.retry_policy, r.deadline, r.execution_timeout_ms, r.concurrency_key, r.tags
        from unnest(v_req) r
        left join claimed c on c.job_id = r.id
       where r.key_hash is null or c.job_id is not null
      returning id, queue
    ),
    events as (
      insert into workhorse.job_event (job_id, kind, data)
      select r.id, 'enqueued',
             case when r.key_hash is null then jsonb_build_object('queue', r.queue, 'runAt', r.run_at)
             else jsonb_build_object('queue', r.queue, 'runAt', r.run_at, 'mode', r.mode, 'scope', r.scope,
                                     'keyPreview', r.key_preview, 'keyDigest', left(encode(r.key_hash, 'hex'), 12),
                                     'keyLength', r.key_length, 'ttlMs', r.ttl_ms, 'expiresAt', c.expires_at,
                                     'requestDigest', r.request_digest) end
        from new_jobs n
        join unnest(v_req) r on r.id = n.id
        left join claimed c on c.job_id = n.id
    )
    select (select array_agg(c.job_id) from claimed c),
           (select array_agg(distinct n.queue) from new_jobs n)
      into v_won, v_queues;

    select array_agg(row(k.scope, k.key_hash, k.lead_ordinal, k.job_id, k.mode, k.field_digests, k.request_digest,
                         k.expires_at,
                         case when k.status = 'claim' and k.job_id = any (coalesce(v_won, '{}')) then 'won'
                              else k.status end)::workhorse.enqueue_key order by k.scope, k.key_hash)
      into v_keys
      from unnest(v_keys) k;

    -- Keys another transaction bound after our snapshot: we hold their row lock now; read them fresh.
    select count(*) into v_lost from unnest(v_keys) k where k.status = 'claim';
    if v_lost > 0 then
      select array_agg(row(k.scope, k.key_hash, k.lead_ordinal,
                           coalesce(b.job_id, k.job_id), coalesce(b.mode, k.mode),
                           coalesce(b.field_digests, k.field_digests), coalesce(b.request_digest, k.request_digest),
                           coalesce(b.expires_at, k.expires_at),
                           case when k.status <> 'claim' then k.status
                                when b.job_id is null then 'missing' else 'live' end
                       )::workhorse.enqueue_key order by k.scope, k.key_hash)
        into v_keys
        from unnest(v_keys) k
        left join workhorse.idempotency_binding b
          on k.status = 'claim' and b.scope = k.scope and b.key_hash = k.key_hash;
      if exists (select 1 from unnest(v_keys) k where k.status = 'missing') then
        raise exception using errcode = '40001',
          message = 'workhorse: an idempotency binding changed concurrently; retry the enqueue';
      end if;
      perform workhorse.check_conflicts(v_req, v_keys);
    end if;

    if p_notify and v_queues is not null then
      perform pg_notify('workhorse_jobs', q) from unnest(v_queues) q;
    end if;
  end if;

  return query
    select r.ordinal,
           case when r.key_hash is null then r.id else k.job_id end,
           case when r.key_hash is null then 'accepted'
                when k.status = 'won' and k.lead_ordinal = r.ordinal then 'accepted'
                else 'replayed' end,
           r.request_digest,
           k.expires_at
      from unnest(v_req) r
      left join unnest(v_keys) k on k.scope = r.scope and k.key_hash = r.key_hash
     order by r.ordinal;
end $$;

-- Purge pending jobs: tombstone them (state purged, who, when, why), release the bindings they own
-- (and only those), add a purged event, and write one operator_audit row, in one transaction.
--   p_job_ids: the jobs to purge, or null to purge every pending job of p_queue.
-- Returns purged (count), released_bindings (count) and, when one job id was given and not purged,
-- refused_state: its state, or 'missing' when there is no such job. Refusals are audited too.
create function workhorse.purge_jobs(p_job_ids uuid[], p_queue text, p_actor text, p_reason text)
returns table (purged integer, released_bindings integer, refused_state text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_purged uuid[];
  v_released integer;
  v_refused text;
begin
  with p as (
    update workhorse.job j
       set state = 'purged', purged_at = now(), purged_by = p_actor, purge_reason = p_reason, updated_at = now()
     where j.state in ('ready', 'scheduled')
       and (case when p_job_ids is null then j.queue = p_queue else j.id = any (p_job_ids) end)
    returning j.id
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select p.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from p
  )
  select coalesce(array_agg(p.id), '{}') into v_purged from p;

  delete from workhorse.idempotency_binding b where b.job_id = any (v_purged);
  get diagnostics v_released = row_count;

  if p_job_ids is not null and cardinality(p_job_ids) = 1 and cardinality(v_purged) = 0 then
    select coalesce((select j.state from workhorse.job j where j.id = p_job_ids[1]), 'missing') into v_refused;
  end if;

  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor,
          case when p_job_ids is null then 'purge_queue' else 'purge_job' end,
          case when p_job_ids is null then 'queue:' || p_queue else 'job:' || array_to_string(p_job_ids, ',') end,
          p_reason,
          case when v_refused is null
               then jsonb_build_object('status', 'ok', 'purged', cardinality(v_purged), 'releasedBindings', v_released)
               else jsonb_build_object('status', 'refused', 'state', v_refused) end);

  return query select cardinality(v_purged), v_released, v_refused;
end $$;
