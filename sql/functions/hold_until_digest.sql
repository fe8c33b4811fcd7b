-- The 8 bytes a key lifetime adds after a request's field digests (docs/enqueue.md, "Key
-- lifetimes"): the first bytes of SHA-256 of holdUntil's JSON form, as every other field's digest,
-- and nothing at all without a lifetime, so a request without holdUntil keeps the digests and the
-- request digest it always had (bindings made before lifetimes existed still replay). It is the
-- 12th field of fingerprint_fields(), so a conflict over it names `holdUntil`. The cast to the
-- workhorse.key_hold_until domain is the lifetime's bound check ('finished' or 'started'): every
-- writer of a lifetime computes this digest in the statement that stores it. Declared stable as its
-- body is (convert_to), so the planner inlines it.
create or replace function workhorse.hold_until_digest(p_hold_until text)
returns bytea language sql stable parallel safe as $$
  select case when p_hold_until is null then ''::bytea
              else substring(sha256(convert_to(to_json(p_hold_until::workhorse.key_hold_until)::text, 'UTF8'))
                             from 1 for 8) end
$$;
