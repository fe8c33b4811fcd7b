-- The Citus variant of sql/functions/move_live_keys.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/move_live_keys.sql ae8f7f21aeba12c1

-- Redrive (operator): sources locked one by one on their shards, in id order; the redriven job is
-- made in its source's bucket (the client gives the new id the source's bucket), so a live key of the
-- source moves to it within one shard.
create or replace function workhorse.move_live_keys(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
declare
  v_moved integer;
  v_bucket integer := workhorse.id_bucket(p_from);
  v_now timestamptz := now();
begin
  update workhorse.key_binding b set job_id = p_to
    from workhorse.job s
   where s.bucket = v_bucket and s.id = p_from and b.bucket = s.bucket and b.scope = s.key_scope
     and b.key_hash = s.key_hash and b.job_id = p_from and b.expires_at > v_now;
  get diagnostics v_moved = row_count;
  if v_moved > 0 then
    update workhorse.job t
       set key_scope = s.key_scope, key_hash = s.key_hash, key_mode = s.key_mode, key_preview = s.key_preview,
           key_length = s.key_length, key_ttl_ms = s.key_ttl_ms, request_digest = s.request_digest,
           key_hold_until = s.key_hold_until, key_field_digests = s.key_field_digests
      from workhorse.job s
     where t.bucket = v_bucket and t.id = p_to and s.bucket = t.bucket and s.id = p_from;
  end if;
  return v_moved;
end $$;
