-- The Citus variant of sql/functions/rebind_released_key.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/rebind_released_key.sql 5a6d4cd34682a61f

-- As on one node, in the source's bucket (the redriven job shares it, so the key moves within a shard).
create or replace function workhorse.rebind_released_key(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
declare
  v_bucket integer := workhorse.id_bucket(p_from);
  v_now timestamptz := now();
  v_src record;
begin
  select s.key_scope, s.key_hash, s.key_mode, s.key_preview, s.key_length, s.key_field_digests, s.request_digest,
         s.key_ttl_ms, s.key_hold_until
    into v_src
    from workhorse.job s
   where s.bucket = v_bucket and s.id = p_from and s.key_hold_until is not null and s.key_field_digests is not null;
  if not found then
    return 0;
  end if;
  insert into workhorse.key_binding as b
    (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
     created_at, expires_at, hold_until)
  values (v_bucket, v_src.key_scope, v_src.key_hash, p_from, v_src.key_mode, v_src.key_preview, v_src.key_length,
          v_src.key_field_digests, v_src.request_digest, v_src.key_ttl_ms, v_now,
          coalesce(v_now + v_src.key_ttl_ms * interval '1 millisecond', 'infinity'), v_src.key_hold_until)
  on conflict (bucket, scope, key_hash) do update
    set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
        key_length = excluded.key_length, field_digests = excluded.field_digests,
        request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms, created_at = excluded.created_at,
        expires_at = excluded.expires_at, hold_until = excluded.hold_until, schedule = null, max_wait_ms = null
    where b.expires_at <= v_now;
  if not found then
    return 0;
  end if;
  return workhorse.move_live_keys(p_from, p_to);
end $$;
