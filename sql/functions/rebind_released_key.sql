-- Redrive of a job whose key was released with it (docs/enqueue.md, "Key lifetimes"): binds the key
-- again as p_from's request bound it (the digests p_from keeps for this), with the same lifetime and
-- TTL counted from now, when no other job holds it live; then moves it to p_to as a live key moves
-- (move_live_keys, which also gives p_to the key columns). Returns how many were bound (0 or 1).
create or replace function workhorse.rebind_released_key(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
--@citus+ declare
--@citus+   v_bucket integer := workhorse.id_bucket(p_from);
--@citus+   v_now timestamptz := now();
--@citus+   v_src record;
begin
  -- On Citus in the source's bucket (the redriven job shares it, so the key moves within a shard): the
  -- source's key read first, then bound with VALUES.
  --@citus+ select s.key_scope, s.key_hash, s.key_mode, s.key_preview, s.key_length, s.key_field_digests, s.request_digest,
  --@citus+        s.key_ttl_ms, s.key_hold_until
  --@citus+   into v_src
  --@citus+   from workhorse.job s
  --@citus+  where s.bucket = v_bucket and s.id = p_from and s.key_hold_until is not null and s.key_field_digests is not null;
  --@citus+ if not found then
  --@citus+   return 0;
  --@citus+ end if;
  insert into workhorse.key_binding as b
    (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
    --@citus (bucket, scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
     created_at, expires_at, hold_until)
  select s.key_scope, s.key_hash, p_from, s.key_mode, s.key_preview, s.key_length, s.key_field_digests, --@single
         s.request_digest, s.key_ttl_ms, now(), coalesce(now() + s.key_ttl_ms * interval '1 millisecond', 'infinity'), --@single
         s.key_hold_until --@single
    from workhorse.job s --@single
   where s.id = p_from and s.key_hold_until is not null and s.key_field_digests is not null --@single
  --@citus+ values (v_bucket, v_src.key_scope, v_src.key_hash, p_from, v_src.key_mode, v_src.key_preview, v_src.key_length,
  --@citus+         v_src.key_field_digests, v_src.request_digest, v_src.key_ttl_ms, v_now,
  --@citus+         coalesce(v_now + v_src.key_ttl_ms * interval '1 millisecond', 'infinity'), v_src.key_hold_until)
  on conflict (scope, key_hash) do update
  --@citus on conflict (bucket, scope, key_hash) do update
    set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
        key_length = excluded.key_length, field_digests = excluded.field_digests,
        request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms, created_at = excluded.created_at,
        expires_at = excluded.expires_at, hold_until = excluded.hold_until, schedule = null, max_wait_ms = null
    where b.expires_at <= now();
    --@citus where b.expires_at <= v_now;
  if not found then
    return 0;
  end if;
  return workhorse.move_live_keys(p_from, p_to);
end $$;
