-- Moves the live binding p_from owns to p_to, with the key columns. Returns how many moved (0 or 1).
create or replace function workhorse.move_live_keys(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
declare
  v_moved integer;
  --@citus+ v_bucket integer := workhorse.id_bucket(p_from);
  --@citus+ v_now timestamptz := now();
begin
  update workhorse.key_binding b set job_id = p_to
    from workhorse.job s
   where s.id = p_from and b.scope = s.key_scope and b.key_hash = s.key_hash
   --@citus where s.bucket = v_bucket and s.id = p_from and b.bucket = s.bucket and b.scope = s.key_scope
     and b.job_id = p_from and b.expires_at > now();
     --@citus and b.key_hash = s.key_hash and b.job_id = p_from and b.expires_at > v_now;
  get diagnostics v_moved = row_count;
  if v_moved > 0 then
    update workhorse.job t
       set key_scope = s.key_scope, key_hash = s.key_hash, key_mode = s.key_mode, key_preview = s.key_preview,
           key_length = s.key_length, key_ttl_ms = s.key_ttl_ms, request_digest = s.request_digest,
           key_hold_until = s.key_hold_until, key_field_digests = s.key_field_digests
      from workhorse.job s
     where t.id = p_to and s.id = p_from;
     --@citus where t.bucket = v_bucket and t.id = p_to and s.bucket = t.bucket and s.id = p_from;
  end if;
  return v_moved;
end $$;
