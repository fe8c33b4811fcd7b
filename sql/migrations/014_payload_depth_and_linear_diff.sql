-- Payload nesting bound, re-checked by PostgreSQL, and a conflict diff that stays fast on deep payloads.

-- A payload nests at most 100 levels of objects and arrays ({} and [1] are one level; see LIMITS.maxPayloadDepth
-- and docs/enqueue.md, input rules). The client refuses deeper payloads; this constraint refuses them from any
-- writer (enqueue_one, enqueue_batch, a debounce replacement, a redrive copy, a plain INSERT or UPDATE). The
-- jsonpath `.**{100}` visits only the first 100 levels and stops at the first container found at level 100: one
-- pass over the payload in C, never deeper than the bound. A table CHECK, not a domain as in 001: functions
-- return the payload column with RETURN QUERY, which refuses a domain where the declared result is jsonb, so a
-- domain would mean redefining every one of them. Measured: about 1 µs per small payload (docs/decisions.md).
-- NOT VALID: rows stored before this migration are not re-checked (no scan under the lock, and old data never
-- makes the migration fail); every new or changed row is.
alter table workhorse.job add constraint job_payload_depth
  check (not (payload @? 'strict $.**{100} ? (@.type() == "object" || @.type() == "array")')) not valid;
