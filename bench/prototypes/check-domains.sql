-- Prototype (bench database only): the same bounds as SPEC §2's CHECK constraints, enforced by
-- domains instead. PostgreSQL prepares a table's CHECK expressions again for every INSERT statement
-- (bench/micro-checks.ts: +41-50 µs per one-row INSERT into a job-shaped table), while a domain's
-- checks are prepared once per backend and compiled into the cached plan (+9 µs). An accept inserts
-- into two checked tables. Only the two-column rule (deadline > run_at) stays a table CHECK.
create domain workhorse.name_128 as text check (char_length(value) between 1 and 128 and value !~ '[[:cntrl:]]');
create domain workhorse.job_state as text
  check (value in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged'));
create domain workhorse.attempt_count as integer check (value >= 0);
create domain workhorse.max_attempts as integer check (value between 1 and 1000);
create domain workhorse.duration_ms as bigint check (value between 1 and 31536000000);
create domain workhorse.tag_list as text[] check (cardinality(value) <= 32);
create domain workhorse.scope_name as text check (octet_length(value) between 1 and 256);
create domain workhorse.key_hash as bytea check (octet_length(value) = 32);
create domain workhorse.key_mode as text check (value in ('idempotency', 'debounce', 'throttle'));
create domain workhorse.key_preview as text check (char_length(value) between 1 and 9);
create domain workhorse.key_length as integer check (value between 1 and 512);
create domain workhorse.sha256_hex as text check (char_length(value) = 64);

do $$
declare
  c record;
  recreate text[] := '{}';
  def text;
begin
  -- Triggers that name columns (AFTER UPDATE OF state) block ALTER COLUMN TYPE: recreate them after.
  for c in select tgname, pg_get_triggerdef(oid) as def from pg_trigger
            where tgrelid = 'workhorse.job'::regclass and not tgisinternal and tgattr::text <> ''
  loop
    recreate := recreate || c.def;
    execute format('drop trigger %I on workhorse.job', c.tgname);
  end loop;
  for c in select conrelid::regclass::text as rel, conname from pg_constraint
            where contype = 'c'
              and conrelid in ('workhorse.job'::regclass, 'workhorse.idempotency_binding'::regclass)
  loop
    execute format('alter table %s drop constraint %I', c.rel, c.conname);
  end loop;
  alter table workhorse.job
    alter column queue type workhorse.name_128, alter column type type workhorse.name_128,
    alter column state type workhorse.job_state, alter column attempt type workhorse.attempt_count,
    alter column max_attempts type workhorse.max_attempts,
    alter column execution_timeout_ms type workhorse.duration_ms, alter column tags type workhorse.tag_list,
    add check (deadline is null or deadline > run_at);
  alter table workhorse.idempotency_binding
    alter column scope type workhorse.scope_name, alter column key_hash type workhorse.key_hash,
    alter column mode type workhorse.key_mode, alter column key_preview type workhorse.key_preview,
    alter column key_length type workhorse.key_length, alter column request_digest type workhorse.sha256_hex,
    alter column ttl_ms type workhorse.duration_ms;
  foreach def in array recreate loop
    execute def;
  end loop;
end $$;
