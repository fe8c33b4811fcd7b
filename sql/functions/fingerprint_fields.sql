create or replace function workhorse.fingerprint_fields() returns text[] language sql immutable as $$
  select array['concurrencyKey', 'deadline', 'executionTimeoutMs', 'maxAttempts', 'payload', 'queue',
               'retryPolicy', 'runAt', 'tags', 'ttlMs', 'type']
$$;
