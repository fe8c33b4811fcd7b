-- The digests to decide on: those PostgreSQL computed (p_computed, from request_field_digests), once
-- the ones the client sent (p_sent: null, 88 bytes, or 80 without the payload's) agree with them;
-- otherwise WH422. p_computed must be a column or variable, not the call itself: an argument used
-- twice is inlined only when it is cheap.
create or replace function workhorse.verified_field_digests(p_ordinal integer, p_sent bytea, p_computed bytea)
returns bytea language sql stable parallel safe as $$
  select case when p_sent is null or p_sent = p_computed
                   or (octet_length(p_sent) = 80
                       and p_sent = substring(p_computed from 1 for 32) || substring(p_computed from 41))
              then p_computed
              else workhorse.raise_field_digests_mismatch(p_ordinal, p_sent, p_computed) end
$$;
