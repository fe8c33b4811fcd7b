-- Refuses a statement whose client-sent digests differ from those of the values it carries: SQLSTATE
-- WH422 with a JSON detail naming the fields (never values) and the request's ordinal in its call.
-- Nothing is written: the call's statement is aborted. Declared stable (it reads nothing and writes
-- nothing), so verified_field_digests, which calls it, is still inlined.
create or replace function workhorse.raise_field_digests_mismatch(p_ordinal integer, p_sent bytea, p_computed bytea)
returns bytea language plpgsql stable as $$
declare
  v_fields text[];
  v_sent_bytes integer := octet_length(p_sent);
begin
  if v_sent_bytes = 80 then
    -- A client that digests every field but the payload (the payload's 8 bytes are PostgreSQL's).
    p_sent := substring(p_sent from 1 for 32) || substring(p_computed from 33 for 8) || substring(p_sent from 33);
  end if;
  select coalesce(array_agg(f.name order by f.name), '{}') into v_fields
    from unnest(workhorse.fingerprint_fields()) with ordinality as f(name, i)
   where f.i <= 11
     and substring(p_sent from (f.i::integer - 1) * 8 + 1 for 8)
         is distinct from substring(p_computed from (f.i::integer - 1) * 8 + 1 for 8);
  raise exception using
    errcode = 'WH422',
    message = 'workhorse: the field digests sent with this request are not those of its values',
    detail = jsonb_build_object(
      'ordinal', p_ordinal,
      'fields', to_jsonb(v_fields),
      'sentBytes', v_sent_bytes)::text,
    hint = 'The client digests a field differently from PostgreSQL (or the statement was changed after it '
           'digested): send p_field_digests null to let PostgreSQL digest the request.';
end $$;
