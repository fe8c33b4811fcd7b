-- The signatures before migrations 009, 013, 018 (no p_trace_context) and 026 (no p_hold_untils), in
-- that order: CREATE OR REPLACE cannot change or add an argument, so an installation made before one
-- of them loses the old function here.
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean);
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[]);
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[], boolean);
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[], boolean, text);

-- p_trace_context: the producer's W3C traceparent (one per call), stored on every job it accepts.
-- p_hold_untils: each request's key lifetime (docs/enqueue.md, "Key lifetimes"), or null for a call
-- without any; a request with one may have a null TTL.
create or replace function workhorse.enqueue_batch(
  p_ids uuid[], p_queues text[], p_types text[], p_payloads jsonb, p_run_ats timestamptz[],
  p_max_attempts integer[], p_retry_policies jsonb[], p_deadlines timestamptz[], p_execution_timeouts bigint[],
  p_concurrency_keys text[], p_tags text[], p_tag_counts integer[], p_modes text[], p_scopes text[],
  p_key_hashes bytea[], p_key_previews text[], p_key_lengths integer[], p_ttls bigint[], p_field_digests bytea[],
  p_legacy_key_hashes bytea[], p_notify boolean, p_schedules text[] default null, p_max_waits bigint[] default null,
  p_retry boolean default false, p_trace_context text default null, p_hold_untils text[] default null)
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
  if p_hold_untils is not null and exists (
       select 1 from unnest(p_key_hashes, p_ttls, p_hold_untils, p_modes) as u(k, t, h, m)
        where u.k is not null and (u.t is null or u.h is not null) and (u.h is null or u.m = 'throttle')) then
    raise exception using errcode = '22023',
      message = 'workhorse: a key needs a TTL unless it is held until its job finishes or starts (not with throttle)';
  end if;
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
    return query select * from workhorse.enqueue_batch_recall(
      p_ids, p_modes, p_scopes, v_hashes, p_payloads,
      workhorse.batch_field_digests(p_queues, p_types, p_payloads, p_run_ats, p_max_attempts, p_retry_policies,
                                    p_deadlines, p_execution_timeouts, p_concurrency_keys, p_tags, p_tag_counts,
                                    p_ttls, p_key_hashes, p_field_digests),
      p_hold_untils);
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
                      p_key_previews, p_key_lengths, p_ttls, p_field_digests, p_schedules, p_max_waits, p_hold_untils)
                      with ordinality
               as x(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                    concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, schedule,
                    max_wait, hold, ord)
         order by x.kh is null, x.scope, x.kh, x.ord
      loop
        v_cur := r.ord::integer;
        select o.job_id, o.outcome, o.request_digest, o.reason into v_one
          from workhorse.enqueue_one(
                 r.id, r.queue, r.type, p_payloads -> (r.ord::integer - 1), r.run_at, r.max_attempts, r.retry_policy,
                 r.deadline, r.execution_timeout_ms, r.concurrency_key,
                 coalesce(p_tags[r.tag_off + 1 : r.tag_off + r.tag_count], '{}'), r.mode, r.scope, r.kh,
                 r.key_preview, r.key_length, r.ttl_ms, r.fd, false, r.schedule, r.max_wait, false, p_trace_context,
                 r.hold) o;
        v_ord := v_ord || v_cur;
        v_job := v_job || v_one.job_id;
        v_out := v_out || v_one.outcome;
        v_dig := v_dig || v_one.request_digest;
        v_rsn := v_rsn || v_one.reason;
        if v_one.outcome = 'accepted' then
          v_queues := array_append(coalesce(v_queues, '{}'), r.queue);
        end if;
      end loop;
    exception when sqlstate 'WH422' then
      get stacked diagnostics v_detail = pg_exception_detail;
      raise exception using errcode = 'WH422', message = 'workhorse: the field digests sent with this request are not those of its values',
        detail = jsonb_set(v_detail::jsonb, '{ordinal}', to_jsonb(v_cur))::text;
    when sqlstate 'WH409' then
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
                    p_key_previews, p_key_lengths, p_ttls, p_field_digests, p_hold_untils) with ordinality
             as x(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                  concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, hold, ord)
    ),
    req as (
      select s.ord::integer as ordinal, s.id, s.queue, s.type, coalesce(p.v, 'null'::jsonb) as payload,
             coalesce(s.run_at, now()) as run_at, s.run_at as given_run_at, s.max_attempts, s.retry_policy,
             s.deadline, s.execution_timeout_ms, s.concurrency_key,
             coalesce(p_tags[s.tag_off + 1 : s.tag_off + s.tag_count], '{}') as tags,
             s.mode, s.scope, s.kh, s.key_preview, s.key_length, s.ttl_ms, s.hold, d.digests,
             sha256(d.digests || workhorse.hold_until_digest(s.hold)) as rdigest
        from src s
        left join lateral (select p_payloads -> (s.ord::integer - 1) as v) p on true
       -- The field digests of the values received (request_field_digests.sql), computed once per keyed
       -- request (offset 0 keeps the subquery, so verified_field_digests takes a column and is inlined).
       cross join lateral (
          select case when s.kh is not null then
                   workhorse.request_field_digests(s.queue, s.type, coalesce(p.v, 'null'::jsonb), s.run_at,
                                                   s.max_attempts, s.retry_policy, s.deadline, s.execution_timeout_ms,
                                                   s.concurrency_key,
                                                   coalesce(p_tags[s.tag_off + 1 : s.tag_off + s.tag_count], '{}'),
                                                   s.ttl_ms)
                 end as computed offset 0) c
       cross join lateral (
          select case when s.kh is not null then workhorse.verified_field_digests(s.ord::integer, s.fd, c.computed)
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
             b.job_id as live_job_id, b.mode as live_mode,
             b.field_digests || workhorse.hold_until_digest(b.hold_until) as live_digests,
             b.request_digest as live_rdigest
        from req r
        left join lead l on l.scope = r.scope and l.kh = r.kh
        left join req lr on lr.ordinal = l.lead_ordinal
        left join lateral (
          select b.job_id, b.mode, b.field_digests, b.request_digest, b.hold_until
            from workhorse.key_binding b
           where b.scope = r.scope and b.key_hash = r.kh and b.expires_at > now()
           limit 1) b on true
    ),
    claimed as (
      insert into workhorse.key_binding as b
        (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
         created_at, expires_at, hold_until)
      select s.scope, s.kh, s.id, s.mode, s.key_preview, s.key_length, s.digests, s.rdigest, s.ttl_ms,
             now(), coalesce(now() + s.ttl_ms * interval '1 millisecond', 'infinity'), s.hold
        from seen s
       where s.kh is not null and s.ordinal = s.lead_ordinal and s.live_job_id is null
       order by s.scope, s.kh
      on conflict (scope, key_hash) do update
        set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
            key_length = excluded.key_length, field_digests = excluded.field_digests,
            request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms,
            created_at = excluded.created_at, expires_at = excluded.expires_at, hold_until = excluded.hold_until
        where b.expires_at <= now() and b.job_id <> excluded.job_id
      returning b.job_id
    ),
    jobs as (
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy, deadline,
                                 execution_timeout_ms, concurrency_key, tags, key_scope, key_hash, key_mode,
                                 key_preview, key_length, key_ttl_ms, request_digest, enqueued_run_at, trace_context,
                                 key_hold_until, key_field_digests)
      select s.id, s.queue, s.type, s.payload, case when s.run_at > now() then 'scheduled' else 'ready' end,
             s.run_at, s.max_attempts, s.retry_policy, s.deadline, s.execution_timeout_ms, s.concurrency_key, s.tags,
             s.scope, s.kh, s.mode, s.key_preview, s.key_length, s.ttl_ms, s.rdigest, s.given_run_at, p_trace_context,
             case when s.kh is not null then s.hold end, case when s.hold is not null then s.digests end
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
             s.lead_rdigest, s.mode, s.digests || workhorse.hold_until_digest(s.hold) as digests, s.payload
        from seen s
    )
    select array_agg(d.ordinal order by d.ordinal), array_agg(d.job_id order by d.ordinal),
           array_agg(d.outcome order by d.ordinal),
           array_agg(case when d.outcome in ('replayed', 'coalesced') then encode(d.rdigest, 'hex') end
                     order by d.ordinal),
           (select array_agg(distinct j.queue) from jobs j),
           (select workhorse.raise_key_conflict(
                     f.ordinal, f.live_job_id, coalesce(f.live_mode, f.lead_mode),
                     coalesce(f.live_digests, (select l.digests || workhorse.hold_until_digest(l.hold)
                                                 from req l where l.ordinal = f.lead_ordinal)),
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
