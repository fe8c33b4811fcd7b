-- The Citus variant of sql/functions/release_held_keys.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/release_held_keys.sql 287ff294635eb139

-- Job by job, on the job's shard: the binding shares the job's bucket, so the delete and its join are
-- one colocated shard query (a delete joining an unnest of ids would reach every shard).
create or replace function workhorse.release_held_keys(p_ids uuid[], p_reasons text[]) returns integer
language plpgsql as $$
declare
  r record;
  v_hold text;
  v_released integer := 0;
begin
  for r in select u.id, u.reason, workhorse.id_bucket(u.id) as bucket
             from unnest(p_ids, p_reasons) as u(id, reason) loop
    delete from workhorse.key_binding b
     using workhorse.job j
     where j.bucket = r.bucket and j.id = r.id and j.key_hold_until is not null
       and b.bucket = r.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
    returning j.key_hold_until into v_hold;
    if found then
      insert into workhorse.job_event (job_id, kind, data)
      values (r.id, 'key_released', jsonb_build_object('holdUntil', v_hold, 'reason', r.reason));
      v_released := v_released + 1;
    end if;
  end loop;
  return v_released;
end $$;
