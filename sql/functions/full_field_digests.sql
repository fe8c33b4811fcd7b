-- A request's 88-byte field digests (fingerprint_fields() order, 8 bytes each) from what its client
-- sent: clients that digest the payload themselves (from its jsonb text: docs/enqueue.md, "The
-- payload digest") send all 88 bytes, used as they are; a client that does not sends 80, every field
-- but the payload, and the payload's digest is taken here from the jsonb PostgreSQL stores, the 5th.
-- Both give the same bytes for the same request. An SQL function with one expression, which the
-- planner inlines, so a caller pays only for the branch it takes; declared stable as its body is
-- (convert_to): PostgreSQL never inlines an immutable function over a stable body, and a call that
-- is not inlined costs a function executor per request.
create or replace function workhorse.full_field_digests(p_field_digests bytea, p_payload jsonb)
returns bytea language sql stable parallel safe as $$
  select case when octet_length(p_field_digests) = 88 then p_field_digests
              else substring(p_field_digests from 1 for 32)
                   || substring(sha256(convert_to(coalesce(p_payload, 'null'::jsonb)::text, 'UTF8')) from 1 for 8)
                   || substring(p_field_digests from 33) end
$$;
