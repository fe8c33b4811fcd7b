-- A keyed request's 88-byte field digests (fingerprint_fields() order, 8 bytes each: the first bytes
-- of SHA-256 of the field's JSON form), computed from the values the statement carries: PostgreSQL
-- trusts no digest of a value it received (docs/enqueue.md, "What PostgreSQL trusts"). The JSON
-- forms are the ones every client digests (sdk/conformance/enqueue.json pins them):
--   strings as to_json writes them (JSON.stringify's escapes), numbers as integers, null as null;
--   timestamps as ISO 8601 in UTC at millisecond precision ("2026-01-02T03:04:05.678Z");
--   runAt as {"omitted":true} when the caller gave none (p_run_at null);
--   tags distinct, sorted bytewise (COLLATE "C" is UTF-8 byte order);
--   retryPolicy as {"initialDelayMs":..,"multiplier":..,"maxDelayMs":..} (the normalised shape), any
--   other value as its jsonb text;
--   the payload as its jsonb text, the text PostgreSQL writes for what it stores.
-- holdUntil's digest follows them (hold_until_digest.sql). SQL functions with one expression, which
-- the planner inlines (declared stable as their bodies are: to_char, convert_to; a stable function
-- is inlined only when nothing in its body is volatile). Digests a client sent are checked against
-- these by verified_field_digests.sql.

create or replace function workhorse.request_field_digests(
  p_queue text, p_type text, p_payload jsonb, p_run_at timestamptz, p_max_attempts integer,
  p_retry_policy jsonb, p_deadline timestamptz, p_execution_timeout_ms bigint, p_concurrency_key text,
  p_tags text[], p_ttl_ms bigint)
returns bytea language sql stable parallel safe as $$
  select substring(sha256(convert_to(coalesce(to_json(p_concurrency_key)::text, 'null'), 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(
           '"' || to_char(p_deadline at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null'), 'UTF8'))
           from 1 for 8)
      || substring(sha256(convert_to(coalesce(p_execution_timeout_ms::text, 'null'), 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(p_max_attempts::text, 'null'), 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(p_payload, 'null'::jsonb)::text, 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(to_json(p_queue)::text, 'null'), 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(case
           when p_retry_policy is null or p_retry_policy = 'null'::jsonb then 'null'
           when jsonb_typeof(p_retry_policy) = 'object'
                and p_retry_policy - 'initialDelayMs' - 'multiplier' - 'maxDelayMs' = '{}'::jsonb
                and p_retry_policy ?& array['initialDelayMs', 'multiplier', 'maxDelayMs']
             then '{"initialDelayMs":' || (p_retry_policy -> 'initialDelayMs')::text
                  || ',"multiplier":' || (p_retry_policy -> 'multiplier')::text
                  || ',"maxDelayMs":' || (p_retry_policy -> 'maxDelayMs')::text || '}'
           else p_retry_policy::text end, 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(
           '"' || to_char(p_run_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', '{"omitted":true}'),
           'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(case
           when coalesce(cardinality(p_tags), 0) = 0 then '[]'
           else workhorse.fingerprint_tags(p_tags) end, 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(p_ttl_ms::text, 'null'), 'UTF8')) from 1 for 8)
      || substring(sha256(convert_to(coalesce(to_json(p_type)::text, 'null'), 'UTF8')) from 1 for 8)
$$;
