-- The Citus variant of sql/functions/enqueue_batch.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/enqueue_batch.sql 7fad500b4ddafb18

-- A batch on the coordinator, one transaction (two-phase commit across the workers it touched, so a
-- conflict anywhere leaves nothing anywhere): the requests go shard by shard, each decided by
-- enqueue_one_at on its shard; within a shard keys in (scope, hash) order, so batches that share
-- keys lock them in one order and never deadlock, and a key's requests in input order, so a
-- repeated key sees its first request's binding (later ones replay, coalesce, replace or conflict,
-- as on one node). Same signature and results as the single-node function; p_legacy_key_hashes is
-- ignored (the distributed layout starts empty, so no binding predates the keyed hashes).
-- The signature before migration 018 (no p_trace_context), as in the single-node file.
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[], boolean);
-- The signature before migration 026 (no p_hold_untils), as in the single-node file.
drop function if exists workhorse.enqueue_batch(uuid[], text[], text[], jsonb, timestamptz[], integer[], jsonb[], timestamptz[],
                                      bigint[], text[], text[], integer[], text[], text[], bytea[], text[], integer[],
                                      bigint[], bytea[], bytea[], boolean, text[], bigint[], boolean, text);

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
  r record;
  d record;
  v_id uuid;
  v_ord integer[] := '{}';
  v_job uuid[] := '{}';
  v_out text[] := '{}';
  v_dig text[] := '{}';
  v_why text[] := '{}';
  v_queues text[] := '{}';
  v_detail jsonb;
begin
  -- A retry of a batch whose earlier try committed (one proposed id exists: the batch is atomic):
  -- its answers read back from what it stored, nothing written (as on one node).
  if p_retry then
    foreach v_id in array p_ids loop
      if exists (select 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_id) and j.id = v_id) then
        return query select * from workhorse.enqueue_batch_recall(
          p_ids, p_modes, p_scopes, p_key_hashes, p_payloads,
          workhorse.batch_field_digests(p_queues, p_types, p_payloads, p_run_ats, p_max_attempts, p_retry_policies,
                                        p_deadlines, p_execution_timeouts, p_concurrency_keys, p_tags, p_tag_counts,
                                        p_ttls, p_key_hashes, p_field_digests),
          p_hold_untils);
        return;
      end if;
    end loop;
  end if;
  <<requests>>
  begin
  for r in
    select u.*, (sum(u.tag_count) over (order by u.o) - u.tag_count)::integer as tag_off,
           workhorse.id_bucket(u.id) as bucket
      from unnest(p_ids, p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                  p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_modes, p_scopes, p_key_hashes,
                  p_key_previews, p_key_lengths, p_ttls, p_field_digests) with ordinality
           as u(id, queue, type, run_at, max_attempts, retry_policy, deadline, execution_timeout_ms,
                concurrency_key, tag_count, mode, scope, kh, key_preview, key_length, ttl_ms, fd, o)
     order by get_shard_id_for_distribution_column('workhorse.job', workhorse.id_bucket(u.id)), u.scope, u.kh, u.o
  loop
    select * into d
      from workhorse.enqueue_one_at(
             r.bucket, r.o::integer, r.id, r.queue, r.type, p_payloads -> (r.o::integer - 1), r.run_at,
             r.max_attempts, r.retry_policy, r.deadline, r.execution_timeout_ms, r.concurrency_key,
             coalesce(p_tags[r.tag_off + 1 : r.tag_off + r.tag_count], '{}'), r.mode, r.scope, r.kh, r.key_preview,
             r.key_length, r.ttl_ms, r.fd, false, p_schedules[r.o], p_max_waits[r.o], false, p_trace_context,
             p_hold_untils[r.o]);
    if d.outcome = 'accepted' or (d.outcome = 'replaced' and p_notify) then
      v_queues := v_queues || r.queue;
    end if;
    v_ord := v_ord || r.o::integer;
    v_job := v_job || d.job_id;
    v_out := v_out || d.outcome;
    v_dig := v_dig || d.request_digest;
    v_why := v_why || d.reason;
  end loop;
  exception when sqlstate 'WH409' then
    -- A conflict with an earlier request of this batch names no existing job (it was never
    -- committed), as on one node: one of this batch's own proposed ids.
    get stacked diagnostics v_detail = pg_exception_detail;
    if (v_detail ->> 'existingJobId')::uuid = any (p_ids) then
      v_detail := jsonb_set(v_detail, '{existingJobId}', 'null');
    end if;
    raise exception using errcode = 'WH409', message = 'workhorse: idempotency conflict', detail = v_detail::text;
  end requests;
  if p_notify then
    perform pg_notify('workhorse_jobs', q) from (select distinct q from unnest(v_queues) q) x;
  end if;
  return query
    select u.o, u.j, u.oc, u.d, u.w from unnest(v_ord, v_job, v_out, v_dig, v_why) as u(o, j, oc, d, w) order by u.o;
end $$;
