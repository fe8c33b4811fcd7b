-- The release of keys held until their jobs finish or start (docs/enqueue.md, "Key lifetimes"), for
-- jobs the calling function has just changed in this transaction. Callers run it only when one of
-- their jobs has a lifetime (job.key_hold_until not null), so a job without one costs nothing: no
-- statement opens key_binding for it. Each release deletes one binding by its primary key (scope,
-- key_hash), fenced by the job id (a key rebound to another job since stays bound), and writes a
-- key_released event. p_reasons, one per id: the job's new state ('succeeded', 'failed', 'canceled',
-- 'purged') or 'started'. Returns how many bindings it released.
-- PL/pgSQL, so a caller's planner never opens its body (it would lock key_binding to try inlining it).
create or replace function workhorse.release_held_keys(p_ids uuid[], p_reasons text[]) returns integer
language plpgsql as $$
declare
  v_released integer;
begin
  with released as (
    delete from workhorse.key_binding b
     using unnest(p_ids, p_reasons) as u(id, reason), workhorse.job j
     where j.id = u.id and j.key_hold_until is not null
       and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
    returning b.job_id, j.key_hold_until, u.reason
  ),
  ev as (
    insert into workhorse.job_event (job_id, kind, data)
    select r.job_id, 'key_released', jsonb_build_object('holdUntil', r.key_hold_until, 'reason', r.reason)
      from released r
    returning 1
  )
  select count(*)::integer into v_released from ev;
  return v_released;
end $$;
