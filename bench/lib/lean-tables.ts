/**
 * The lean shape's tables (docs/benchmarks.md, "Server-side shapes"): copies of `workhorse.job` and
 * `workhorse.key_binding` in schema `lean` with plain column types, no domains, no table CHECK and
 * no short-id index; the pending-jobs and binding-expiry indexes kept. Needs the workhorse schema
 * (run after `migrate`). Used by bench/shapes.ts and by the lean-shape contender of `npm run bench`.
 */
export const LEAN_TABLES = `
create schema lean;
create table lean.job (like workhorse.job including defaults);
create table lean.key_binding (like workhorse.key_binding including defaults);
alter table lean.job add primary key (id);
alter table lean.key_binding add primary key (scope, key_hash);
create index on lean.job (queue, run_at, id) where state in ('scheduled', 'ready');
create index on lean.key_binding (expires_at);
alter table lean.job alter queue type text, alter type type text, alter state type text, alter attempt type int,
  alter max_attempts type int, alter execution_timeout_ms type bigint, alter tags type text[], alter key_scope type text,
  alter key_hash type bytea, alter key_mode type text, alter key_preview type text, alter key_length type int,
  alter key_ttl_ms type bigint, alter request_digest type bytea;
alter table lean.key_binding alter scope type text, alter key_hash type bytea, alter mode type text,
  alter key_preview type text, alter key_length type int, alter field_digests type bytea,
  alter request_digest type bytea, alter ttl_ms type bigint, alter max_wait_ms type bigint;
`;
