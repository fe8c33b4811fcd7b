-- Raises WH409 (idempotency conflict) with a JSON detail naming the differing fingerprint fields and
-- the payload paths (paths only: the detail may reach the server log, values must not).
-- p_existing_job_id is null when the key's owner is an earlier request of the same batch.
create or replace function workhorse.raise_conflict(
  p_ordinal integer, p_existing_job_id uuid, p_existing_mode text, p_stored_digests text[],
  p_stored_request_digest text, p_rejected_mode text, p_rejected_digests text[], p_rejected_request_digest text,
  p_stored_payload jsonb, p_rejected_payload jsonb)
returns boolean language plpgsql as $$
declare
  v_fields text[];
  v_paths text[];
begin
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields(), p_stored_digests, p_rejected_digests) as f(name, a, b)
   where f.a is distinct from f.b;
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
      'storedRequestDigest', p_stored_request_digest,
      'rejectedRequestDigest', p_rejected_request_digest)::text;
end $$;
