-- p_again (redrive a source that was redriven before) came with migration 016.
drop function if exists workhorse.redrive_jobs(uuid[], uuid[], bytea, text, text, boolean);
-- Until migration 026 the result had no key_status column. The argument types did not change, so the
-- old function is dropped only while it still has the old result (as heartbeat_jobs.sql does).
do $$
begin
  if pg_get_function_result(to_regprocedure('workhorse.redrive_jobs(uuid[], uuid[], bytea, text, text, boolean, boolean)'))
     not like '%key_status%' then
    drop function workhorse.redrive_jobs(uuid[], uuid[], bytea, text, text, boolean, boolean);
  end if;
end $$;
-- key_status, for a redriven source that had a key: 'moved' (its live binding now names the new job),
-- 'bound' (its key was released with it, a key lifetime, and was free: bound to the new job as it
-- was), 'taken' (released, and another job holds it now: the new job runs without it), 'expired'
-- (the binding had expired: the new job runs without it). docs/operator-actions.md, redrive.
create or replace function workhorse.redrive_jobs(p_sources uuid[], p_new_ids uuid[], p_request_hash bytea, p_actor text,
                                       p_reason text, p_dry_run boolean, p_again boolean)
returns table (source_job_id uuid, status text, job_id uuid, key_status text)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  v_src record;
  v_status text[] := '{}';
  v_src_ids uuid[] := '{}';
  v_job_ids uuid[] := '{}';
  v_keys text[] := '{}';
  v_one integer;
  v_moved integer := 0;
  v_queues text[] := '{}';
  --@citus+ v_lock uuid;
begin
  -- Every source is locked up front, in id order: overlapping bulk redrives queue instead of
  -- deadlocking, and a concurrent identical request, once the first commits, finds its
  -- redrive_request (each statement below reads a fresh snapshot) and replays.
  if not p_dry_run then
    perform 1 from workhorse.job j where j.id = any (p_sources) order by j.id for update;
    --@citus for v_lock in select distinct u.id from unnest(p_sources) u(id) order by 1 loop
    --@citus+   perform 1 from workhorse.job j where j.bucket = workhorse.id_bucket(v_lock) and j.id = v_lock for update;
    --@citus+ end loop;
  end if;
  for r in select s.src, s.new_id, s.ord
             from unnest(p_sources, p_new_ids) with ordinality as s(src, new_id, ord)
            order by s.ord loop
    if r.src = any (v_src_ids) then
      -- The same source twice in one call: same answer as the first time.
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || (case when v_status[array_position(v_src_ids, r.src)] = 'redriven' then 'replayed'
                                    else v_status[array_position(v_src_ids, r.src)] end);
      v_job_ids := v_job_ids || v_job_ids[array_position(v_src_ids, r.src)];
      v_keys := v_keys || null::text;
      continue;
    end if;
    select q.job_id, q.requested_by, q.reason into v_src
      from workhorse.redrive_request q where q.source_job_id = r.src and q.request_hash = p_request_hash;
    if found then
      if v_src.requested_by is distinct from p_actor or v_src.reason is distinct from p_reason then
        raise exception using
          errcode = 'WH412',
          message = 'workhorse: redrive request id reused with a different request',
          detail = jsonb_build_object(
            'sourceJobId', r.src, 'existingJobId', v_src.job_id,
            'conflictingFields', to_jsonb(array_remove(array[
              case when v_src.reason is distinct from p_reason then 'reason' end,
              case when v_src.requested_by is distinct from p_actor then 'requestedBy' end], null)))::text;
      end if;
      v_src_ids := v_src_ids || r.src;
      v_status := v_status || 'replayed'::text;
      v_job_ids := v_job_ids || v_src.job_id;
      v_keys := v_keys || null::text;
      continue;
    end if;
    select j.id, j.state, j.queue, j.type, j.payload, j.tags, j.concurrency_key, j.retry_policy, j.max_attempts,
           j.execution_timeout_ms, j.redriven_to, j.key_scope, j.key_hash, j.key_mode, j.key_preview, j.key_length,
           --@citus j.execution_timeout_ms, j.redriven_to, j.key_hash, j.key_hold_until
           j.key_ttl_ms, j.request_digest, j.key_hold_until, j.key_field_digests --@single
      into v_src
      from workhorse.job j where j.id = r.src for update;
      --@citus from workhorse.job j where j.bucket = workhorse.id_bucket(r.src) and j.id = r.src for update;
    v_src_ids := v_src_ids || r.src;
    v_keys := v_keys || null::text;
    if not found then
      v_status := v_status || 'not_found'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif v_src.state <> 'failed' then
      v_status := v_status || 'not_failed'::text;
      v_job_ids := v_job_ids || null::uuid;
    elsif v_src.redriven_to is not null and not p_again then
      -- Redriven before, by another request: not twice unless asked; the answer names the job it made.
      v_status := v_status || 'already_redriven'::text;
      v_job_ids := v_job_ids || v_src.redriven_to;
    elsif p_dry_run then
      v_status := v_status || 'eligible'::text;
      v_job_ids := v_job_ids || null::uuid;
    else
      -- enqueued_inline null: this job's timeline starts with the explicit `enqueued` event below
      -- (it names the source and the operator), not with an entry made from key columns.
      insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, retry_policy,
      --@citus insert into workhorse.job (bucket, id, queue, type, payload, state, run_at, max_attempts, retry_policy,
                                 execution_timeout_ms, concurrency_key, tags, redriven_from, enqueued_inline)
      values (r.new_id, v_src.queue, v_src.type, v_src.payload, 'ready', now(), v_src.max_attempts,
      --@citus values (workhorse.id_bucket(r.new_id), r.new_id, v_src.queue, v_src.type, v_src.payload, 'ready', now(), v_src.max_attempts,
              v_src.retry_policy, v_src.execution_timeout_ms, v_src.concurrency_key, v_src.tags, r.src, null);
      insert into workhorse.redrive_request (source_job_id, request_hash, requested_by, reason, job_id)
      values (r.src, p_request_hash, p_actor, p_reason, r.new_id);
      update workhorse.job j set redriven_to = r.new_id where j.id = r.src;
      --@citus update workhorse.job j set redriven_to = r.new_id where j.bucket = workhorse.id_bucket(r.src) and j.id = r.src;
      v_one := workhorse.move_live_keys(r.src, r.new_id);
      if v_one = 0 and v_src.key_hold_until is not null then
        v_one := workhorse.rebind_released_key(r.src, r.new_id);
        v_keys[cardinality(v_keys)] := case when v_one > 0 then 'bound' else 'taken' end;
      elsif v_src.key_hash is not null then
        v_keys[cardinality(v_keys)] := case when v_one > 0 then 'moved' else 'expired' end;
      end if;
      v_moved := v_moved + v_one;
      insert into workhorse.job_event (job_id, kind, data)
      values (r.new_id, 'enqueued', jsonb_build_object('queue', v_src.queue, 'runAt', now(), 'redrivenFrom', r.src,
                                                       'actor', p_actor, 'reason', p_reason)),
             (r.src, 'redriven', jsonb_build_object('jobId', r.new_id, 'actor', p_actor, 'reason', p_reason));
      v_queues := v_queues || v_src.queue::text;
      v_status := v_status || 'redriven'::text;
      v_job_ids := v_job_ids || r.new_id;
    end if;
  end loop;

  perform pg_notify('workhorse_jobs', q) from (select distinct unnest(v_queues) as q) x;
  if not p_dry_run then
    insert into workhorse.operator_audit (actor, action, target, reason, result)
    select p_actor, 'redrive',
           case when cardinality(p_sources) = 1 then 'job:' || p_sources[1] else 'jobs:' || cardinality(p_sources) end,
           p_reason,
           jsonb_build_object('requested', cardinality(p_sources), 'movedKeys', v_moved)
             || coalesce((select jsonb_object_agg(s.status, s.n)
                            from (select u.st as status, count(*) as n from unnest(v_status) u(st) group by 1) s), '{}');
  end if;
  return query select * from unnest(v_src_ids, v_status, v_job_ids, v_keys);
end $$;
