-- Workhorse schema: jobs, idempotency bindings, job events, enqueue observations, operator audit.
-- Runs on PostgreSQL 14..18: gen_random_uuid() and sha256() are core since 13/11; nothing newer.

-- Stored bounds (docs/enqueue.md, input rules) are CHECK constraints on domains rather than on the tables: PostgreSQL
-- rebuilds a table's CHECK expressions for every INSERT statement it executes (about 40-50 µs for
-- these, measured by bench/micro-checks.ts), while a domain's checks are prepared once per session.
-- A buggy client is refused all the same.
create domain workhorse.name_text as text
  check (char_length(value) between 1 and 128 and value !~ '[[:cntrl:]]');
create domain workhorse.job_state as text
  check (value in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged'));
create domain workhorse.attempt_count as integer check (value >= 0);
create domain workhorse.max_attempts as integer check (value between 1 and 1000);
create domain workhorse.duration_ms as bigint check (value between 1 and 31536000000);
create domain workhorse.tag_list as text[] check (cardinality(value) <= 32);
create domain workhorse.scope_text as text check (octet_length(value) between 1 and 256);
create domain workhorse.key_hash as bytea check (octet_length(value) = 32);
create domain workhorse.key_mode as text check (value in ('idempotency', 'debounce', 'throttle'));
create domain workhorse.key_preview as text check (char_length(value) between 1 and 9);
create domain workhorse.key_length as integer check (value between 1 and 512);
create domain workhorse.sha256_hex as text check (char_length(value) = 64);

create table workhorse.job (
  id                   uuid primary key,  -- UUIDv7 from the client: time-ordered, so the pk serves "newest first"
  queue                workhorse.name_text not null,
  type                 workhorse.name_text not null,
  payload              jsonb not null,
  state                workhorse.job_state not null,
  run_at               timestamptz not null,
  attempt              workhorse.attempt_count not null default 0,
  max_attempts         workhorse.max_attempts not null,
  retry_policy         jsonb,
  deadline             timestamptz,
  execution_timeout_ms workhorse.duration_ms,
  concurrency_key      text,
  tags                 workhorse.tag_list not null default '{}',
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
  constraint job_deadline_after_run_at check (deadline is null or deadline > run_at)
);

-- Claiming and per-queue purge read only pending jobs; a partial index stays small.
create index job_pending_idx on workhorse.job (queue, run_at) where state in ('scheduled', 'ready');
-- Expired leases are found without scanning finished jobs.
create index job_lease_idx on workhorse.job (lease_expires_at) where state = 'active';

create table workhorse.idempotency_binding (
  scope          workhorse.scope_text not null,
  key_hash       workhorse.key_hash not null,
  job_id         uuid not null,
  mode           workhorse.key_mode not null,
  key_preview    workhorse.key_preview not null,
  key_length     workhorse.key_length not null,
  field_digests  text[] not null,
  request_digest workhorse.sha256_hex not null,
  ttl_ms         workhorse.duration_ms not null,
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

-- Paths (never values) at which two JSON documents differ, e.g. {$.amount, $.items[2].sku}, sorted,
-- at most p_limit of them. A breadth-first walk in one recursive query that descends only into
-- subtrees that differ: linear in the size of the difference, no PL/pgSQL recursion (so no stack
-- limit on deep documents). Object keys that are not identifiers are quoted: $["a b"].
create function workhorse.jsonb_diff_paths(a jsonb, b jsonb, p_limit integer default 100)
returns text[] language sql immutable as $$
  with recursive walk(path, x, y, kinds) as (
    select '$'::text, a, b, jsonb_typeof(a) || '/' || jsonb_typeof(b)
     where a is distinct from b
    union all
    select c.path, c.x, c.y, jsonb_typeof(c.x) || '/' || jsonb_typeof(c.y)
      from walk w
     cross join lateral (
       select case when k.key ~ '^[A-Za-z_][A-Za-z0-9_]*$' then w.path || '.' || k.key
                   else w.path || '[' || to_json(k.key)::text || ']' end as path,
              w.x -> k.key as x, w.y -> k.key as y
         from (select jsonb_object_keys(case when w.kinds = 'object/object' then w.x else '{}' end) as key
               union
               select jsonb_object_keys(case when w.kinds = 'object/object' then w.y else '{}' end)) k
       union all
       select w.path || '[' || i || ']', w.x -> i, w.y -> i
         from generate_series(0, case when w.kinds = 'array/array'
                                      then greatest(jsonb_array_length(w.x), jsonb_array_length(w.y)) - 1
                                      else -1 end) as i
     ) c
     where c.x is distinct from c.y
  )
  select coalesce(array_agg(d.path order by d.path), '{}')
    from (select w.path from walk w
           where coalesce(w.kinds, '') not in ('object/object', 'array/array')
           limit p_limit + 1) d
$$;

create function workhorse.fingerprint_fields() returns text[] language sql immutable as $$
  select array['concurrencyKey', 'deadline', 'executionTimeoutMs', 'maxAttempts', 'payload', 'queue',
               'retryPolicy', 'runAt', 'tags', 'ttlMs', 'type']
$$;

-- Raises WH409 (idempotency conflict) with a JSON detail naming the differing fingerprint fields and
-- the payload paths (paths only: the detail may reach the server log, values must not).
-- p_existing_job_id is null when the key's owner is an earlier request of the same batch.
create function workhorse.raise_conflict(
  p_ordinal integer, p_existing_job_id uuid, p_existing_mode text, p_stored_digests text[],
  p_stored_request_digest text, p_rejected_mode text, p_rejected_digests text[], p_rejected_request_digest text,
  p_stored_payload jsonb, p_rejected_payload jsonb)
returns boolean language plpgsql as $$
declare
  v_fields text[];
  v_paths text[];
begin
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields(), p_stored_digests, p_rejected_digests) as f(name, a, b)
   where f.a is distinct from f.b;
  if p_existing_mode is distinct from p_rejected_mode then
    v_fields := array_append(v_fields, 'mode');
  end if;
  if 'payload' = any (v_fields) then
    v_paths := workhorse.jsonb_diff_paths(p_stored_payload, p_rejected_payload, 100);
  end if;
  raise exception using
    errcode = 'WH409',
    message = 'workhorse: idempotency conflict',
    detail = jsonb_build_object(
      'ordinal', p_ordinal,
      'existingJobId', p_existing_job_id,
      'existingMode', p_existing_mode,
      'conflictingFields', to_jsonb(v_fields),
      'payloadPaths', to_jsonb(v_paths[1:100]),
      'payloadPathsTruncated', coalesce(cardinality(v_paths) > 100, false),
      'storedRequestDigest', p_stored_request_digest,
      'rejectedRequestDigest', p_rejected_request_digest)::text;
end $$;

-- The enqueue decision for one request (docs/enqueue.md, the decision): the hot path, with scalar parameters and plain
-- statements whose plans stay cached. workhorse.enqueue() below decides batches the same way.
--   p_field_digests: every fingerprint field but the payload, in fingerprint_fields() order; the
--   payload's digest is taken here from PostgreSQL's canonical jsonb text.
-- Keyless requests (p_key_hash null) always insert. A replay is one index read: no lock, no write.
-- A conflict raises WH409 before anything is written.
create function workhorse.enqueue_one(
  p_id uuid, p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_mode text, p_scope text, p_key_hash bytea, p_key_preview text, p_key_length integer,
  p_ttl_ms bigint, p_field_digests text[], p_notify boolean,
  out job_id uuid, out outcome text, out request_digest text, out expires_at timestamptz)
language plpgsql as $$
#variable_conflict use_variable
declare
  v_payload jsonb := coalesce(p_payload, 'null'::jsonb);
  v_run_at timestamptz := coalesce(p_run_at, now());
  v_digests text[];
  v_live record;
begin
  if p_key_hash is not null then
    v_digests := p_field_digests[1:4]
                 || left(encode(sha256(convert_to(v_payload::text, 'UTF8')), 'hex'), 16)
                 || p_field_digests[5:10];
    request_digest := encode(sha256(convert_to(array_to_string(v_digests, ','), 'UTF8')), 'hex');
    for attempt in 1 .. 5 loop
      select b.job_id, b.mode, b.field_digests, b.request_digest, b.expires_at into v_live
        from workhorse.idempotency_binding b
       where b.scope = p_scope and b.key_hash = p_key_hash and b.expires_at > now();
      if found then
        if v_live.request_digest = request_digest and v_live.mode = p_mode then
          job_id := v_live.job_id;
          outcome := 'replayed';
          expires_at := v_live.expires_at;
          return;
        end if;
        perform workhorse.raise_conflict(
          1, v_live.job_id, v_live.mode, v_live.field_digests, v_live.request_digest, p_mode, v_digests,
          request_digest, (select j.payload from workhorse.job j where j.id = v_live.job_id), v_payload);
      end if;
      insert into workhorse.idempotency_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at)
      values (p_scope, p_key_hash, p_id, p_mode, p_key_preview, p_key_length, v_digests, request_digest, p_ttl_ms,
              now(), now() + p_ttl_ms * interval '1 millisecond')
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at
        where b.expires_at <= now()
      returning b.expires_at into expires_at;
      exit when found;
      -- Another transaction bound the key after our snapshot. ON CONFLICT waited for it and holds the
      -- row lock now; the next pass reads it with a fresh snapshot (READ COMMITTED).
    end loop;
    if expires_at is null then
      raise exception using errcode = '40001',
        message = 'workhorse: the idempotency binding kept changing under this enqueue; retry it';
    end if;
  end if;

  insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                             execution_timeout_ms, concurrency_key, tags)
  values (p_id, p_queue, p_type, v_payload, case when v_run_at > now() then 'scheduled' else 'ready' end, v_run_at,
          p_max_attempts, p_retry_policy, p_deadline, p_execution_timeout_ms, p_concurrency_key, p_tags);
  insert into workhorse.job_event (job_id, kind, data)
  values (p_id, 'enqueued',
          case when p_key_hash is null then jsonb_build_object('queue', p_queue, 'runAt', v_run_at)
          else jsonb_build_object('queue', p_queue, 'runAt', v_run_at, 'mode', p_mode, 'scope', p_scope,
                                  'keyPreview', p_key_preview, 'keyDigest', left(encode(p_key_hash, 'hex'), 12),
                                  'keyLength', p_key_length, 'ttlMs', p_ttl_ms, 'expiresAt', expires_at,
                                  'requestDigest', request_digest) end);
  if p_notify then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  job_id := p_id;
  outcome := 'accepted';
end $$;

-- The enqueue decision for 1..1000 requests in one call (docs/enqueue.md, the decision).
--   p_requests: jsonb array of {ordinal, id, queue, type, payload, run_at, max_attempts, retry_policy,
--     deadline, execution_timeout_ms, concurrency_key, tags, and for keyed requests mode, scope,
--     key_hash (hex), key_preview, key_length, ttl_ms, field_digests (every fingerprint field but the
--     payload, in fingerprint_fields() order)}. The payload's digest is taken here, from PostgreSQL's
--     canonical jsonb text, so key order and whitespace do not matter.
--   p_notify: pg_notify('workhorse_jobs', queue) for new jobs inside this transaction.
-- Returns one row per request: ordinal, job_id, outcome ('accepted' | 'replayed'), request_digest,
-- expires_at (the binding's). Raises WH409 on a conflict; nothing it wrote survives that.
--
-- One set-based statement decides everything: each request's owner as of the statement's snapshot
-- (plain index reads: a replay locks and writes nothing), then free or expired keys are taken with
-- INSERT .. ON CONFLICT in (scope, key_hash) order, so overlapping batches queue instead of deadlocking.
-- A key bound by another transaction after our snapshot is locked by ON CONFLICT but not taken; such
-- requests come back as 'retry' and the statement runs again for them alone, with a fresh snapshot
-- (READ COMMITTED). Under REPEATABLE READ / SERIALIZABLE that race is a 40001 instead.
create function workhorse.enqueue(p_requests jsonb, p_notify boolean)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, expires_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_input jsonb := p_requests;
  v_ord integer[] := '{}';
  v_job uuid[] := '{}';
  v_out text[] := '{}';
  v_dig text[] := '{}';
  v_exp timestamptz[] := '{}';
  v_queues text[];
  p_ord integer[];
  p_job uuid[];
  p_out text[];
  p_dig text[];
  p_exp timestamptz[];
  v_conflict boolean;
  v_pass integer := 0;
begin
  loop
    v_pass := v_pass + 1;
    with req as (
      select x.ordinal, x.id, x.queue, x.type, coalesce(x.payload, 'null'::jsonb) as payload,
             coalesce(x.run_at, now()) as run_at, x.max_attempts, x.retry_policy, x.deadline,
             x.execution_timeout_ms, x.concurrency_key, x.tags, x.mode, x.scope, decode(x.key_hash, 'hex') as kh,
             x.key_preview, x.key_length, x.ttl_ms, d.digests,
             encode(sha256(convert_to(array_to_string(d.digests, ','), 'UTF8')), 'hex') as rdigest
        from jsonb_to_recordset(v_input) as x(
               ordinal integer, id uuid, queue text, type text, payload jsonb, run_at timestamptz,
               max_attempts integer, retry_policy jsonb, deadline timestamptz, execution_timeout_ms bigint,
               concurrency_key text, tags text[], mode text, scope text, key_hash text, key_preview text,
               key_length integer, ttl_ms bigint, field_digests text[])
        cross join lateral (
          select case when x.key_hash is not null then
                   x.field_digests[1:4]
                   || left(encode(sha256(convert_to(coalesce(x.payload, 'null'::jsonb)::text, 'UTF8')), 'hex'), 16)
                   || x.field_digests[5:10]
                 end as digests) d
    ),
    -- Each keyed request with its batch leader (first request for the key) and the key's live owner,
    -- found by one primary-key probe per request (LATERAL .. LIMIT 1 keeps it a probe, never a scan).
    seen as (
      select r.*,
             first_value(r.ordinal) over w as lead_ordinal,
             first_value(r.id) over w as lead_id,
             first_value(r.rdigest) over w as lead_rdigest,
             first_value(r.mode) over w as lead_mode,
             b.job_id as live_job_id, b.mode as live_mode, b.field_digests as live_digests,
             b.request_digest as live_rdigest, b.expires_at as live_expires_at
        from req r
        left join lateral (
          select b.job_id, b.mode, b.field_digests, b.request_digest, b.expires_at
            from workhorse.idempotency_binding b
           where b.scope = r.scope and b.key_hash = r.kh and b.expires_at > now()
           limit 1) b on true
      window w as (partition by r.scope, r.kh order by r.ordinal)
    ),
    claimed as (
      insert into workhorse.idempotency_binding as b
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
        where b.expires_at <= now()
      returning b.job_id
    ),
    jobs as (
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags)
      select s.id, s.queue, s.type, s.payload, case when s.run_at > now() then 'scheduled' else 'ready' end,
             s.run_at, s.max_attempts, s.retry_policy, s.deadline, s.execution_timeout_ms, s.concurrency_key, s.tags
        from seen s
       where s.kh is null or s.id in (select c.job_id from claimed c)
      returning id, queue
    ),
    events as (
      insert into workhorse.job_event (job_id, kind, data)
      select s.id, 'enqueued',
             case when s.kh is null then jsonb_build_object('queue', s.queue, 'runAt', s.run_at)
             else jsonb_build_object('queue', s.queue, 'runAt', s.run_at, 'mode', s.mode, 'scope', s.scope,
                                     'keyPreview', s.key_preview, 'keyDigest', left(encode(s.kh, 'hex'), 12),
                                     'keyLength', s.key_length, 'ttlMs', s.ttl_ms,
                                     'expiresAt', now() + s.ttl_ms * interval '1 millisecond',
                                     'requestDigest', s.rdigest) end
        from seen s
       where s.id in (select j.id from jobs j)
    ),
    decided as (
      select s.ordinal, s.kh, s.rdigest,
             case when s.kh is null then s.id
                  when s.live_job_id is not null then s.live_job_id
                  when s.lead_id in (select c.job_id from claimed c) then s.lead_id end as job_id,
             case when s.kh is null then 'accepted'
                  when s.live_job_id is not null then 'replayed'
                  when s.lead_id in (select c.job_id from claimed c) then
                    case when s.ordinal = s.lead_ordinal then 'accepted' else 'replayed' end
                  else 'retry' end as outcome,
             case when s.live_job_id is not null then s.live_expires_at
                  when s.kh is not null then now() + s.ttl_ms * interval '1 millisecond' end as expires_at,
             -- Differs from the key's owner: the live binding, else the batch leader.
             s.kh is not null and (
               case when s.live_job_id is not null then s.live_rdigest <> s.rdigest or s.live_mode <> s.mode
                    else s.lead_rdigest <> s.rdigest or s.lead_mode <> s.mode end) as differs,
             s.live_job_id, s.live_mode, s.live_digests, s.live_rdigest, s.lead_ordinal, s.lead_mode,
             s.lead_rdigest, s.mode, s.digests, s.payload
        from seen s
    )
    select array_agg(d.ordinal order by d.ordinal), array_agg(d.job_id order by d.ordinal),
           array_agg(d.outcome order by d.ordinal), array_agg(d.rdigest order by d.ordinal),
           array_agg(d.expires_at order by d.ordinal),
           (select array_agg(distinct j.queue) from jobs j),
           (select workhorse.raise_conflict(
                     f.ordinal, f.live_job_id, coalesce(f.live_mode, f.lead_mode),
                     coalesce(f.live_digests, (select l.digests from req l where l.ordinal = f.lead_ordinal)),
                     coalesce(f.live_rdigest, f.lead_rdigest),
                     f.mode, f.digests, f.rdigest,
                     case when f.live_job_id is not null
                          then (select j.payload from workhorse.job j where j.id = f.live_job_id)
                          else (select l.payload from req l where l.ordinal = f.lead_ordinal) end,
                     f.payload)
              from decided f where f.differs order by f.ordinal limit 1)
      into p_ord, p_job, p_out, p_dig, p_exp, v_queues, v_conflict
      from decided d;

    if p_notify and v_queues is not null then
      perform pg_notify('workhorse_jobs', q) from unnest(v_queues) q;
    end if;

    -- The usual case: one pass decided everything (the arrays are already in ordinal order).
    if v_pass = 1 and not ('retry' = any (p_out)) then
      return query select * from unnest(p_ord, p_job, p_out, p_dig, p_exp);
      return;
    end if;

    -- Keep what this pass decided; run again only for requests that lost a race.
    select array_agg(u.o order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.j order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.oc order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.d order by u.o) filter (where u.oc <> 'retry'),
           array_agg(u.e order by u.o) filter (where u.oc <> 'retry')
      into p_ord, p_job, p_out, p_dig, p_exp
      from unnest(p_ord, p_job, p_out, p_dig, p_exp) as u(o, j, oc, d, e);
    v_ord := v_ord || coalesce(p_ord, '{}');
    v_job := v_job || coalesce(p_job, '{}');
    v_out := v_out || coalesce(p_out, '{}');
    v_dig := v_dig || coalesce(p_dig, '{}');
    v_exp := v_exp || coalesce(p_exp, '{}');
    exit when cardinality(v_ord) = jsonb_array_length(p_requests);
    if v_pass >= 5 then
      raise exception using errcode = '40001',
        message = 'workhorse: idempotency bindings kept changing under this enqueue; retry it';
    end if;
    select jsonb_agg(e) into v_input
      from jsonb_array_elements(v_input) e
     where not ((e ->> 'ordinal')::integer = any (v_ord));
  end loop;

  return query
    select u.o, u.j, u.oc, u.d, u.e
      from unnest(v_ord, v_job, v_out, v_dig, v_exp) as u(o, j, oc, d, e)
     order by u.o;
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
