-- Redrive of a job whose key was released with it (docs/enqueue.md, "Key lifetimes"): binds the key
-- again as p_from's request bound it (the digests p_from keeps for this), with the same lifetime and
-- TTL counted from now, when no other job holds it live; then moves it to p_to as a live key moves
-- (move_live_keys, which also gives p_to the key columns). Returns how many were bound (0 or 1).
create or replace function workhorse.rebind_released_key(p_from uuid, p_to uuid) returns integer
language plpgsql as $$
begin
  insert into workhorse.key_binding as b
    (scope, key_hash, job_id, mode, key_preview, key_length, field_digests, request_digest, ttl_ms,
     created_at, expires_at, hold_until)
  select s.key_scope, s.key_hash, p_from, s.key_mode, s.key_preview, s.key_length, s.key_field_digests,
         s.request_digest, s.key_ttl_ms, now(), coalesce(now() + s.key_ttl_ms * interval '1 millisecond', 'infinity'),
         s.key_hold_until
    from workhorse.job s
   where s.id = p_from and s.key_hold_until is not null and s.key_field_digests is not null
  on conflict (scope, key_hash) do update
    set job_id = excluded.job_id, mode = excluded.mode, key_preview = excluded.key_preview,
        key_length = excluded.key_length, field_digests = excluded.field_digests,
        request_digest = excluded.request_digest, ttl_ms = excluded.ttl_ms, created_at = excluded.created_at,
        expires_at = excluded.expires_at, hold_until = excluded.hold_until, schedule = null, max_wait_ms = null
    where b.expires_at <= now();
  if not found then
    return 0;
  end if;
  return workhorse.move_live_keys(p_from, p_to);
end $$;
