-- holdUntil is last, out of name order: its digest follows the other 11 and only when the request
-- has a lifetime (hold_until_digest.sql), so older requests keep their 88 bytes.
create or replace function workhorse.fingerprint_fields() returns text[] language sql immutable as $$
  select array['concurrencyKey', 'deadline', 'executionTimeoutMs', 'maxAttempts', 'payload', 'queue',
               'retryPolicy', 'runAt', 'tags', 'ttlMs', 'type', 'holdUntil']
$$;
