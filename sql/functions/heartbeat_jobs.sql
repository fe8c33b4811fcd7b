-- Until migration 007 the result had no cancel_requested column. The argument types did not change,
-- so the old function is dropped only while it still has the old result (CREATE OR REPLACE cannot
-- change a result type; an unconditional drop would re-create the function on every apply).
do $$
begin
  -- null (no such function) is not "not like": nothing is dropped then.
  if pg_get_function_result(to_regprocedure('workhorse.heartbeat_jobs(uuid[], integer[], text[], integer)'))
     not like '%cancel_requested%' then
    drop function workhorse.heartbeat_jobs(uuid[], integer[], text[], integer);
  end if;
end $$;

create or replace function workhorse.heartbeat_jobs(p_ids uuid[], p_attempts integer[], p_owners text[], p_lease_ms integer)
returns table (id uuid, attempt integer, lease_owner text, lease_expires_at timestamptz, cancel_requested boolean)
language sql as $$
  update workhorse.job j
     set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    from unnest(p_ids, p_attempts, p_owners) as r(id, attempt, owner)
   where j.id = r.id and j.attempt = r.attempt and j.lease_owner = r.owner and j.state = 'active'
  returning j.id, j.attempt, j.lease_owner, j.lease_expires_at, j.cancel_requested_at is not null
$$;
