-- Retry delay in ms after attempt p_attempt (1-based) failed: initialDelayMs * multiplier^(attempt-1),
-- capped at maxDelayMs. The exponent is capped too (multiplier >= 2 passes any cap long before 60).
create or replace function workhorse.retry_delay_ms(p_policy jsonb, p_attempt integer) returns bigint
language sql immutable as $$
  select least((p_policy ->> 'maxDelayMs')::numeric,
               (p_policy ->> 'initialDelayMs')::numeric
                 * power((p_policy ->> 'multiplier')::numeric, least(greatest(p_attempt - 1, 0), 60)))::bigint
$$;
