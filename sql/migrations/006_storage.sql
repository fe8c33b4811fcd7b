-- Storage for speed (issue 10): a keyed accept writes two rows (the job and a slim key binding), a
-- keyless one writes one; no `enqueued` event row; digests are bytes, not hex text.
--
-- Shape:
--   * workhorse.job carries its key (key_scope, key_hash) and what its timeline shows as the
--     `enqueued` entry (mode, preview, length, ttl, request digest, the runAt the caller gave). Purge
--     and deletion find a job's binding by primary key through these columns, so the binding table
--     needs no index on job_id. Expiry is created_at + key_ttl_ms (both taken from one now()).
--   * workhorse.key_binding: one row per scoped key, primary key (scope, key_hash), plus the
--     expires_at index that cleanup and the console's expired-bindings page walk. Moving a key to
--     another job (redrive) is one UPDATE of job_id; debounce replaces a job's definition in the
--     job row and refreshes the binding's digests and expiry in place.
--   * field_digests: the 11 fingerprint digests (8 bytes each, fingerprint_fields() order) as one
--     88-byte value; request_digest = SHA-256 of those 88 bytes (32 bytes).
--   * workhorse.idempotency_binding remains as a view of key_binding with the old columns (hex text
--     digests), so readers keep working; UPDATE/DELETE of its plain columns pass through.
--   * workhorse.job_timeline: job_event plus the `enqueued` entry each job carries in its columns.
--
-- Carried over: every binding (live or awaiting cleanup, HMAC or legacy SHA-256 hash) with its
-- expiry, mode and digests (request digests are recomputed in the new form, so a request accepted
-- before the upgrade still replays); the owning jobs get their key columns. Jobs made before the
-- upgrade keep their `enqueued` event rows (enqueued_inline is null for them).

create domain workhorse.field_digests as bytea check (octet_length(value) = 88);
create domain workhorse.sha256_bytes as bytea check (octet_length(value) = 32);

create table workhorse.key_binding (
  scope          workhorse.scope_text not null,
  key_hash       workhorse.key_hash not null,
  job_id         uuid not null,
  mode           workhorse.key_mode not null,
  key_preview    workhorse.key_preview not null,
  key_length     workhorse.key_length not null,
  field_digests  workhorse.field_digests not null,
  request_digest workhorse.sha256_bytes not null,
  ttl_ms         workhorse.duration_ms not null,
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  primary key (scope, key_hash)
);
create index key_binding_expires_idx on workhorse.key_binding (expires_at);

insert into workhorse.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                   request_digest, ttl_ms, created_at, expires_at)
select b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length, d.fd, sha256(d.fd), b.ttl_ms,
       b.created_at, b.expires_at
  from workhorse.idempotency_binding b
 cross join lateral (select decode(array_to_string(b.field_digests, ''), 'hex') as fd) d;

alter table workhorse.job
  add column key_scope       workhorse.scope_text,
  add column key_hash        workhorse.key_hash,
  add column key_mode        workhorse.key_mode,
  add column key_preview     workhorse.key_preview,
  add column key_length      workhorse.key_length,
  add column key_ttl_ms      workhorse.duration_ms,
  add column request_digest  workhorse.sha256_bytes,
  add column enqueued_run_at timestamptz,
  add column enqueued_inline boolean;
-- Existing rows keep null (their `enqueued` entry is an event row); new rows carry it inline.
alter table workhorse.job alter column enqueued_inline set default true;

update workhorse.job j
   set key_scope = b.scope, key_hash = b.key_hash, key_mode = b.mode, key_preview = b.key_preview,
       key_length = b.key_length, key_ttl_ms = b.ttl_ms, request_digest = b.request_digest
  from workhorse.key_binding b
 where b.job_id = j.id;
drop table workhorse.idempotency_binding;

-- The old table's columns, for readers written against it. Single-table view: UPDATE and DELETE of
-- the plain columns (job_id, expires_at, ...) pass through to key_binding.
create view workhorse.idempotency_binding as
select b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length,
       array(select encode(substring(b.field_digests from i * 8 + 1 for 8), 'hex')
               from generate_series(0, 10) as i order by i) as field_digests,
       encode(b.request_digest, 'hex') as request_digest, b.ttl_ms, b.created_at, b.expires_at
  from workhorse.key_binding b;

-- Every job's timeline: its event rows plus the `enqueued` entry carried by the job (seq 0).
create view workhorse.job_timeline as
select e.job_id, e.seq, e.at, e.kind, e.data
  from workhorse.job_event e
union all
select j.id, 0::bigint, j.created_at, 'enqueued',
       case when j.key_hash is null
            then jsonb_build_object('queue', j.queue, 'runAt', coalesce(j.enqueued_run_at, j.created_at))
            else jsonb_build_object('queue', j.queue, 'runAt', coalesce(j.enqueued_run_at, j.created_at),
                                    'mode', j.key_mode, 'scope', j.key_scope, 'keyPreview', j.key_preview,
                                    'keyDigest', left(encode(j.key_hash, 'hex'), 12), 'keyLength', j.key_length,
                                    'ttlMs', j.key_ttl_ms,
                                    'expiresAt', j.created_at + j.key_ttl_ms * interval '1 millisecond',
                                    'requestDigest', encode(j.request_digest, 'hex')) end
  from workhorse.job j
 where j.enqueued_inline;
