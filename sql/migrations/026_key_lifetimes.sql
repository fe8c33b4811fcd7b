-- Key lifetimes (docs/enqueue.md, "Key lifetimes"): a key may be held until its job finishes or
-- starts instead of (or as well as) for a time.
--
-- Shape:
--   * workhorse.job.key_hold_until: null for every job without a lifetime. The functions that end a
--     job (or, for 'started', claim it) release the key only for jobs where it is set: one
--     primary-key delete of the binding, guarded by this column, in the transaction that already
--     changes the job. Jobs without a lifetime pay nothing but the null.
--   * workhorse.job.key_field_digests: the binding's field digests, kept on the job only when it
--     has a lifetime, so a redrive of the job after its key was released can bind the key again
--     exactly as it was (the released binding row is gone).
--   * workhorse.key_binding.hold_until: the same lifetime, for readers of bindings; ttl_ms is null
--     when the key is held without a time limit (expires_at is then 'infinity').
-- Nothing is rewritten: nullable columns of base types without defaults, and a dropped NOT NULL.
-- (A column of a domain with a CHECK makes ADD COLUMN rewrite the table, which on a large job
-- table holds its lock for minutes.) The lifetime's bound is checked where every writer computes
-- its digest: workhorse.hold_until_digest() casts the value to the domain below. The job's copy of
-- the field digests is the binding's own value, written by the same call that writes the binding
-- (whose field_digests column keeps its domain).

create domain workhorse.key_hold_until as text check (value in ('finished', 'started'));

alter table workhorse.job
  add column key_hold_until    text,
  add column key_field_digests bytea;

alter table workhorse.key_binding
  add column hold_until text,
  alter column ttl_ms drop not null;
