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
-- p_field_digests: each keyed request's 88 bytes as PostgreSQL computed them (batch_field_digests).
-- p_hold_untils: each request's key lifetime as enqueue_batch got it, part of its request digest.
-- The signature before migration 028 (no p_hold_untils): CREATE OR REPLACE cannot add a parameter.
drop function if exists workhorse.enqueue_batch_recall(uuid[], text[], text[], bytea[], jsonb, bytea[]);
create or replace function workhorse.enqueue_batch_recall(
  p_ids uuid[], p_modes text[], p_scopes text[], p_key_hashes bytea[], p_payloads jsonb, p_field_digests bytea[],
  p_hold_untils text[] default null)
returns table (ordinal integer, job_id uuid, outcome text, request_digest text, reason text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_made uuid[];
  --@citus v_made uuid[] := '{}';
  --@citus+ v_id uuid;
  r record;
  v_job uuid;
  v_in_batch boolean;
  v_bmode text;
  v_bexpires timestamptz;
  v_j record;
  --@citus+ v_now timestamptz := now();
begin
  -- On Citus each read is a router query on its bucket (a job's from its id, a binding's from its key).
  select coalesce(array_agg(u.id), '{}') into v_made --@single
    from unnest(p_ids) u(id) where exists (select 1 from workhorse.job j where j.id = u.id); --@single
  --@citus+ foreach v_id in array p_ids loop
  --@citus+   if exists (select 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_id) and j.id = v_id) then
  --@citus+     v_made := v_made || v_id;
  --@citus+   end if;
  --@citus+ end loop;
  for r in
    select x.id, x.mode, x.scope, x.kh, x.o::integer as o,
    --@citus select x.id, x.mode, x.scope, x.kh, x.o::integer as o, workhorse.key_bucket(x.scope, x.kh) as kb,
           sha256(x.fd || workhorse.hold_until_digest(p_hold_untils[x.o::integer])) as rdigest
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
        --@citus from workhorse.key_binding b where b.bucket = r.kb and b.scope = r.scope and b.key_hash = r.kh;
      if v_job is null then
        select j.id into v_job from workhorse.job j
         where j.key_scope = r.scope and j.key_hash = r.kh order by j.created_at desc limit 1;
         --@citus where j.bucket = r.kb and j.key_scope = r.scope and j.key_hash = r.kh order by j.created_at desc limit 1;
      end if;
      if v_job is null then
        raise exception 'workhorse: this batch committed on an earlier try, but request % has neither a binding nor a job for its key now', r.o;
      end if;
    end if;
    select j.key_mode, j.request_digest,
           j.state in ('scheduled', 'ready') and j.attempt = 0 and j.started_at is null as pending
      into v_j from workhorse.job j where j.id = v_job;
      --@citus into v_j from workhorse.job j where j.bucket = workhorse.id_bucket(v_job) and j.id = v_job;
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
    --@citus elsif v_bexpires <= v_now then
      outcome := 'non_replaceable';
      reason := 'window_elapsed_pending';
    else
      outcome := 'replaced';
    end if;
    return next;
  end loop;
end $$;
