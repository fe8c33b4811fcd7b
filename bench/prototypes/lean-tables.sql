-- Prototype: `job` and `key_binding` with plain base types, no domains and no table CHECKs.
drop view workhorse.idempotency_binding;
drop view workhorse.job_timeline;
drop trigger job_left_active_free_slot on workhorse.job;
drop trigger job_cancel_instead_of_retry on workhorse.job;
alter table workhorse.job
  drop constraint job_deadline_after_run_at,
  drop constraint job_payload_depth,
  drop constraint job_trace_context_length,
  alter column queue type text, alter column type type text, alter column state type text,
  alter column attempt type integer, alter column max_attempts type integer,
  alter column execution_timeout_ms type bigint, alter column tags type text[], alter column key_scope type text,
  alter column key_hash type bytea, alter column key_mode type text, alter column key_preview type text,
  alter column key_length type integer, alter column key_ttl_ms type bigint, alter column request_digest type bytea;
alter table workhorse.key_binding
  drop constraint key_binding_schedule_check,
  alter column field_digests type bytea, alter column key_hash type bytea, alter column key_length type integer,
  alter column key_preview type text, alter column max_wait_ms type bigint, alter column mode type text,
  alter column request_digest type bytea, alter column scope type text, alter column ttl_ms type bigint;
create view workhorse.job_timeline as  SELECT e.job_id,
    e.seq,
    e.at,
    e.kind,
    e.data
   FROM workhorse.job_event e
UNION ALL
 SELECT j.id AS job_id,
    (0)::bigint AS seq,
    j.created_at AS at,
    'enqueued'::text AS kind,
        CASE
            WHEN (j.key_hash IS NULL) THEN jsonb_build_object('queue', j.queue, 'runAt', COALESCE(j.enqueued_run_at, j.created_at))
            ELSE jsonb_build_object('queue', j.queue, 'runAt', COALESCE(j.enqueued_run_at, j.created_at), 'mode', j.key_mode, 'scope', j.key_scope, 'keyPreview', j.key_preview, 'keyDigest', "left"(encode((j.key_hash)::bytea, 'hex'::text), 12), 'keyLength', j.key_length, 'ttlMs', j.key_ttl_ms, 'expiresAt', (j.created_at + ((j.key_ttl_ms)::double precision * '00:00:00.001'::interval)), 'requestDigest', encode((j.request_digest)::bytea, 'hex'::text))
        END AS data
   FROM workhorse.job j
  WHERE j.enqueued_inline;
create trigger job_left_active_free_slot after update of state on workhorse.job for each row
  when (old.state = 'active' and new.state <> 'active' and old.concurrency_key is not null)
  execute function workhorse.job_left_active();
create trigger job_cancel_instead_of_retry before update of state on workhorse.job for each row
  when (old.state = 'active' and new.state in ('ready', 'scheduled') and old.cancel_requested_at is not null)
  execute function workhorse.job_cancel_instead_of_retry();

