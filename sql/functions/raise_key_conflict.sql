-- WH409 with a JSON detail (see raise_conflict in 001), for byte digests: a field differs when its
-- 8 bytes differ.
create or replace function workhorse.raise_key_conflict(
  p_ordinal integer, p_existing_job_id uuid, p_existing_mode text, p_stored_digests bytea,
  p_stored_request_digest bytea, p_rejected_mode text, p_rejected_digests bytea, p_rejected_request_digest bytea,
  p_stored_payload jsonb, p_rejected_payload jsonb)
returns boolean language plpgsql as $$
declare
  v_fields text[];
  v_paths text[];
begin
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields()) with ordinality as f(name, i)
   where substring(p_stored_digests from (f.i::integer - 1) * 8 + 1 for 8)
         is distinct from substring(p_rejected_digests from (f.i::integer - 1) * 8 + 1 for 8);
  if p_existing_mode is distinct from p_rejected_mode then
    v_fields := array_append(v_fields, 'mode');
  end if;
  if 'payload' = any (v_fields) then
    v_paths := workhorse.jsonb_diff_paths(p_stored_payload, p_rejected_payload, 100);
  end if;
  raise exception using
    errcode = 'WH409',
    message = 'workhorse: idempotency conflict',
    detail = jsonb_build_object(
      'ordinal', p_ordinal,
      'existingJobId', p_existing_job_id,
      'existingMode', p_existing_mode,
      'conflictingFields', to_jsonb(v_fields),
      'payloadPaths', to_jsonb(v_paths[1:100]),
      'payloadPathsTruncated', coalesce(cardinality(v_paths) > 100, false),
      'storedRequestDigest', encode(p_stored_request_digest, 'hex'),
      'rejectedRequestDigest', encode(p_rejected_request_digest, 'hex'))::text;
end $$;
