-- Storage for speed (issue 10): a keyed accept writes two rows (the job and a slim key binding), a
-- keyless one writes one; no `enqueued` event row; digests are bytes, not hex text.
--
-- Shape:
--   * workhorse.job carries its key (key_scope, key_hash) and what its timeline shows as the
--     `enqueued` entry (mode, preview, length, ttl, request digest, the runAt the caller gave). Purge
--     and deletion find a job's binding by primary key through these columns, so the binding table
--     needs no index on job_id. Expiry is created_at + key_ttl_ms (both taken from one now()).
--   * workhorse.key_binding: one row per scoped key, primary key (scope, key_hash), plus the
--     expires_at index that cleanup and the console's expired-bindings page walk. Moving a key to
--     another job (redrive) is one UPDATE of job_id; debounce replaces a job's definition in the
--     job row and refreshes the binding's digests and expiry in place.
--   * field_digests: the 11 fingerprint digests (8 bytes each, fingerprint_fields() order) as one
--     88-byte value; request_digest = SHA-256 of those 88 bytes (32 bytes).
--   * workhorse.idempotency_binding remains as a view of key_binding with the old columns (hex text
--     digests), so readers keep working; UPDATE/DELETE of its plain columns pass through.
--   * workhorse.job_timeline: job_event plus the `enqueued` entry each job carries in its columns.
--
-- Carried over: every binding (live or awaiting cleanup, HMAC or legacy SHA-256 hash) with its
-- expiry, mode and digests (request digests are recomputed in the new form, so a request accepted
-- before the upgrade still replays); the owning jobs get their key columns. Jobs made before the
-- upgrade keep their `enqueued` event rows (enqueued_inline is null for them).

create domain workhorse.field_digests as bytea check (octet_length(value) = 88);
create domain workhorse.sha256_bytes as bytea check (octet_length(value) = 32);

create table workhorse.key_binding (
  scope          workhorse.scope_text not null,
  key_hash       workhorse.key_hash not null,
  job_id         uuid not null,
  mode           workhorse.key_mode not null,
  key_preview    workhorse.key_preview not null,
  key_length     workhorse.key_length not null,
  field_digests  workhorse.field_digests not null,
  request_digest workhorse.sha256_bytes not null,
  ttl_ms         workhorse.duration_ms not null,
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  primary key (scope, key_hash)
);
create index key_binding_expires_idx on workhorse.key_binding (expires_at);

insert into workhorse.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                   request_digest, ttl_ms, created_at, expires_at)
select b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length, d.fd, sha256(d.fd), b.ttl_ms,
       b.created_at, b.expires_at
  from workhorse.idempotency_binding b
 cross join lateral (select decode(array_to_string(b.field_digests, ''), 'hex') as fd) d;

alter table workhorse.job
  add column key_scope       workhorse.scope_text,
  add column key_hash        workhorse.key_hash,
  add column key_mode        workhorse.key_mode,
  add column key_preview     workhorse.key_preview,
  add column key_length      workhorse.key_length,
  add column key_ttl_ms      workhorse.duration_ms,
  add column request_digest  workhorse.sha256_bytes,
  add column enqueued_run_at timestamptz,
  add column enqueued_inline boolean;
-- Existing rows keep null (their `enqueued` entry is an event row); new rows carry it inline.
alter table workhorse.job alter column enqueued_inline set default true;

update workhorse.job j
   set key_scope = b.scope, key_hash = b.key_hash, key_mode = b.mode, key_preview = b.key_preview,
       key_length = b.key_length, key_ttl_ms = b.ttl_ms, request_digest = b.request_digest
  from workhorse.key_binding b
 where b.job_id = j.id;

-- A deleted or truncated job takes its binding with it (docs/enqueue.md, expiry), found through the job's key.
create or replace function workhorse.job_deleted() returns trigger language plpgsql as $$
begin
  delete from workhorse.key_binding b using deleted_jobs d
   where b.scope = d.key_scope and b.key_hash = d.key_hash and b.job_id = d.id;
  return null;
end $$;

create or replace function workhorse.job_truncated() returns trigger language plpgsql as $$
begin
  truncate workhorse.key_binding;
  return null;
end $$;

drop function workhorse.enqueue(jsonb, boolean);
drop function workhorse.enqueue_one(uuid, text, text, jsonb, timestamptz, integer, jsonb, timestamptz, bigint, text,
                                    text[], text, text, bytea, text, integer, bigint, text[], boolean);
drop table workhorse.idempotency_binding;

-- The old table's columns, for readers written against it. Single-table view: UPDATE and DELETE of
-- the plain columns (job_id, expires_at, ...) pass through to key_binding.
create view workhorse.idempotency_binding as
select b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length,
       array(select encode(substring(b.field_digests from i * 8 + 1 for 8), 'hex')
               from generate_series(0, 10) as i order by i) as field_digests,
       encode(b.request_digest, 'hex') as request_digest, b.ttl_ms, b.created_at, b.expires_at
  from workhorse.key_binding b;

-- Every job's timeline: its event rows plus the `enqueued` entry carried by the job (seq 0).
create view workhorse.job_timeline as
select e.job_id, e.seq, e.at, e.kind, e.data
  from workhorse.job_event e
union all
select j.id, 0::bigint, j.created_at, 'enqueued',
       case when j.key_hash is null
            then jsonb_build_object('queue', j.queue, 'runAt', coalesce(j.enqueued_run_at, j.created_at))
            else jsonb_build_object('queue', j.queue, 'runAt', coalesce(j.enqueued_run_at, j.created_at),
                                    'mode', j.key_mode, 'scope', j.key_scope, 'keyPreview', j.key_preview,
                                    'keyDigest', left(encode(j.key_hash, 'hex'), 12), 'keyLength', j.key_length,
                                    'ttlMs', j.key_ttl_ms,
                                    'expiresAt', j.created_at + j.key_ttl_ms * interval '1 millisecond',
                                    'requestDigest', encode(j.request_digest, 'hex')) end
  from workhorse.job j
 where j.enqueued_inline;

-- WH409 with a JSON detail (see raise_conflict in 001), for byte digests: a field differs when its
-- 8 bytes differ.
create function workhorse.raise_key_conflict(
  p_ordinal integer, p_existing_job_id uuid, p_existing_mode text, p_stored_digests bytea,
  p_stored_request_digest bytea, p_rejected_mode text, p_rejected_digests bytea, p_rejected_request_digest bytea,
  p_stored_payload jsonb, p_rejected_payload jsonb)
returns boolean language plpgsql as $$
declare
  v_fields text[];
  v_paths text[];
begin
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields()) with ordinality as f(name, i)
   where substring(p_stored_digests from (f.i::integer - 1) * 8 + 1 for 8)
         is distinct from substring(p_rejected_digests from (f.i::integer - 1) * 8 + 1 for 8);
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
      'storedRequestDigest', encode(p_stored_request_digest, 'hex'),
      'rejectedRequestDigest', encode(p_rejected_request_digest, 'hex'))::text;
end $$;

-- The decision for one request (docs/enqueue.md, the decision), the hot path: scalar parameters, plain statements whose
-- plans stay cached. A replay is one primary-key read (no lock, no write); an accept writes the
-- binding and the job; a conflict raises WH409 before anything is written.
--   p_field_digests: 80 bytes, the 8-byte digests of every fingerprint field but the payload, in
--   fingerprint_fields() order; the payload's digest is taken here from PostgreSQL's canonical jsonb.
-- Returns request_digest (hex) on a replay only (what the observation log records).
create function workhorse.enqueue_one(
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
  v_bound boolean := false;
begin
  if p_key_hash is not null then
    v_digests := substring(p_field_digests from 1 for 32)
                 || substring(sha256(convert_to(v_payload::text, 'UTF8')) from 1 for 8)
                 || substring(p_field_digests from 33);
    v_rdigest := sha256(v_digests);
    for attempt in 1 .. 5 loop
      select b.job_id, b.mode, b.field_digests, b.request_digest into v_live
        from workhorse.key_binding b
       where b.scope = p_scope and b.key_hash = p_key_hash and b.expires_at > now();
      if found then
        if v_live.request_digest = v_rdigest and v_live.mode = p_mode then
          job_id := v_live.job_id;
          outcome := 'replayed';
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
        where b.expires_at <= now();
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

-- The decision for 1..1000 requests in one call (docs/enqueue.md, the decision), over typed arrays (one element per
-- request, input order) instead of a JSON document:
--   p_ids, p_queues, p_types; p_payloads: one jsonb array of the payloads; p_run_ats, p_max_attempts,
--   p_retry_policies, p_deadlines, p_execution_timeouts, p_concurrency_keys; p_tags: every request's
--   tags one after another, p_tag_counts how many belong to each; for keyed requests (null elements
--   otherwise) p_modes, p_scopes, p_key_hashes, p_key_previews, p_key_lengths, p_ttls, p_field_digests
--   (80 bytes each, as enqueue_one); p_legacy_key_hashes: null, or each request's pre-HMAC SHA-256
--   hash while the upgrade window is open (a live binding under it decides that request);
--   p_notify: pg_notify('workhorse_jobs', queue) for new jobs inside this transaction.
-- Returns one row per request: ordinal, job_id, outcome ('accepted' | 'replayed'), request_digest
-- (hex, replays only). Raises WH409 on a conflict; nothing it wrote survives that.
--
-- One set-based statement decides everything: each request's owner as of the statement's snapshot
-- (plain index reads: a replay locks and writes nothing), then free or expired keys are taken with
-- INSERT .. ON CONFLICT in (scope, key_hash) order, so overlapping batches queue instead of deadlocking.
-- A key bound by another transaction after our snapshot is locked by ON CONFLICT but not taken; such
-- requests come back as 'retry' and the statement runs again for them alone, with a fresh snapshot
-- (READ COMMITTED). Under REPEATABLE READ / SERIALIZABLE that race is a 40001 instead.
create function workhorse.enqueue_batch(
  p_ids uuid[], p_queues text[], p_types text[], p_payloads jsonb, p_run_ats timestamptz[],
  p_max_attempts integer[], p_retry_policies jsonb[], p_deadlines timestamptz[], p_execution_timeouts bigint[],
  p_concurrency_keys text[], p_tags text[], p_tag_counts integer[], p_modes text[], p_scopes text[],
  p_key_hashes bytea[], p_key_previews text[], p_key_lengths integer[], p_ttls bigint[], p_field_digests bytea[],
  p_legacy_key_hashes bytea[], p_notify boolean)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text)
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
begin
  if p_legacy_key_hashes is not null then
    select array_agg(coalesce(
             (select b.key_hash from workhorse.key_binding b
               where u.l is not null and b.scope = u.s and b.key_hash = u.l and b.expires_at > now()
                 for key share), u.k) order by u.o)
      into v_hashes
      from unnest(p_scopes, p_key_hashes, p_legacy_key_hashes) with ordinality as u(s, k, l, o);
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
        where b.expires_at <= now()
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
                  when s.live_job_id is not null then 'replayed'
                  when s.lead_id in (select c.job_id from claimed c) then
                    case when s.ordinal = s.lead_ordinal then 'accepted' else 'replayed' end
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
           array_agg(case when d.outcome = 'replayed' then encode(d.rdigest, 'hex') end order by d.ordinal),
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
      return query select * from unnest(p_ord, p_job, p_out, p_dig);
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
    select u.o, u.j, u.oc, u.d
      from unnest(v_ord, v_job, v_out, v_dig) as u(o, j, oc, d)
     order by u.o;
end $$;

-- Purge (see 001): the bindings released are those the purged jobs own, found through their keys.
create or replace function workhorse.purge_jobs(p_job_ids uuid[], p_queue text, p_actor text, p_reason text)
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
    returning j.id, j.key_scope, j.key_hash
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select p.id, 'purged', jsonb_build_object('actor', p_actor, 'reason', p_reason) from p
  ),
  released as (
    delete from workhorse.key_binding b using p
     where b.scope = p.key_scope and b.key_hash = p.key_hash and b.job_id = p.id
    returning 1
  )
  select coalesce(array_agg(p.id), '{}'), (select count(*) from released) into v_purged, v_released from p;

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
