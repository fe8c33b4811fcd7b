-- The distributed layout (Citus): applied by migrate({ distributed: true }) after the numbered
-- migrations, on a coordinator that has the citus extension and registered workers. Single-node
-- installations never run this file.
--
-- Distribution column: workhorse.job.bucket and workhorse.key_binding.bucket, an integer 0..4095.
--   * keyed job: the bucket of its key, workhorse.key_bucket(scope, key_hash) (the first 12 bits of
--     SHA-256(scope || 0x00 || key_hash)), so a key's binding and every job it names share a shard;
--   * unkeyed job: a random bucket.
-- The client writes the bucket into the last 12 bits of the job id (workhorse.id_bucket reads it),
-- so anything that knows a job id also knows its shard, and the bucket set of a shard is known:
-- workers claim from one shard at a time with `bucket = any(<that shard's buckets>)`.
--
-- Tables:
--   distributed, colocated by bucket: job, key_binding (every decision touches one shard);
--   distributed by job_id: job_event, job_checkpoint (written by job id; a job's rows in one shard);
--   reference (on every node): queue_pause (read by every claim);
--   local on the coordinator: concurrency_slot (claims run on the coordinator and decide keys
--     there, as on one node), migration, installation, console_session, operator_audit,
--     maintenance_run, enqueue_observation, redrive_request, worker_heartbeat (operator and
--     console tables).

do $$
begin
  if not exists (select 1 from pg_extension where extname = 'citus') then
    raise exception 'workhorse: the distributed layout needs the citus extension in this database';
  end if;
  if exists (select 1 from workhorse.job limit 1) or exists (select 1 from workhorse.key_binding limit 1) then
    raise exception 'workhorse: the distributed layout is applied to an empty schema (move the jobs after)';
  end if;
end $$;

create function workhorse.id_bucket(p_id uuid) returns integer
language sql immutable parallel safe as $$ select ('x' || right(p_id::text, 3))::bit(12)::integer $$;

create function workhorse.key_bucket(p_scope text, p_key_hash bytea) returns integer
language sql immutable parallel safe as $$
  select (get_byte(d, 0) << 4) | (get_byte(d, 1) >> 4)
    from sha256(convert_to(p_scope, 'UTF8') || '\x00'::bytea || p_key_hash) as d
$$;

-- Triggers on distributed tables fire on the shards, where they cannot reach other tables; the
-- functions below do their work explicitly.
drop trigger job_deleted_release_bindings on workhorse.job;
drop trigger job_truncated_release_bindings on workhorse.job;
drop trigger job_left_active_free_slot on workhorse.job;
drop trigger job_deleted_release_worker_rows on workhorse.job;
drop trigger job_truncated_release_worker_rows on workhorse.job;
drop trigger job_cancel_instead_of_retry on workhorse.job;

-- What can stay a trigger: a cancel-requested job that would go back to the queue becomes canceled
-- instead, a change of the row alone (it runs on the shard). Its `canceled` event is written by the
-- functions that end attempts (workhorse.reap_expired_leases here; see docs/scale-out.md).
create function workhorse.job_cancel_instead_of_retry_on_shard() returns trigger language plpgsql as $$
begin
  new.state := 'canceled';
  new.finished_at := now();
  new.lease_owner := null;
  new.lease_expires_at := null;
  return new;
end $$;
create trigger job_cancel_instead_of_retry before update of state on workhorse.job
  for each row when (old.state = 'active' and new.state in ('ready', 'scheduled') and old.cancel_requested_at is not null)
  execute function workhorse.job_cancel_instead_of_retry_on_shard();
-- A deleted job takes its binding with it, also on a shard: the binding's shard is colocated with the
-- job's (same bucket, same node), so the trigger deletes from that shard table directly.
create function workhorse.job_deleted_on_shard() returns trigger language plpgsql as $$
declare
  v_bucket integer;
begin
  for v_bucket in select distinct d.bucket from deleted_jobs d where d.key_hash is not null loop
    execute format(
      'delete from %s b using deleted_jobs d
        where d.bucket = $1 and b.bucket = d.bucket and b.scope = d.key_scope and b.key_hash = d.key_hash
          and b.job_id = d.id',
      shard_name('workhorse.key_binding'::regclass,
                 get_shard_id_for_distribution_column('workhorse.key_binding', v_bucket)))
      using v_bucket;
  end loop;
  return null;
end $$;
create trigger job_deleted_release_bindings after delete on workhorse.job
  referencing old table as deleted_jobs for each statement execute function workhorse.job_deleted_on_shard();
set local citus.enable_unsafe_triggers = on;

drop view workhorse.idempotency_binding;
drop view workhorse.job_timeline;

alter table workhorse.job add column bucket integer not null;
alter table workhorse.job drop constraint job_pkey;
alter table workhorse.job add primary key (id, bucket);
-- One active job per concurrency key is enforced by concurrency_slot alone (a unique index on a
-- distributed table must contain the bucket).
drop index workhorse.job_active_concurrency_key_idx;

alter table workhorse.key_binding add column bucket integer not null;
alter table workhorse.key_binding drop constraint key_binding_pkey;
alter table workhorse.key_binding add primary key (bucket, scope, key_hash);

select create_distributed_table('workhorse.job', 'bucket');
select create_distributed_table('workhorse.key_binding', 'bucket', colocate_with => 'workhorse.job');
select create_distributed_table('workhorse.job_event', 'job_id');
select create_distributed_table('workhorse.job_checkpoint', 'job_id', colocate_with => 'workhorse.job_event');
select create_reference_table('workhorse.queue_pause');

-- Which buckets each shard of workhorse.job holds (refreshed by workhorse.refresh_shard_buckets()
-- after shards are split; moving a shard to another node keeps its id).
create table workhorse.shard_bucket (
  shard_id bigint not null,
  buckets  integer[] not null,
  primary key (shard_id)
);
create function workhorse.refresh_shard_buckets() returns integer language plpgsql as $$
begin
  delete from workhorse.shard_bucket;
  insert into workhorse.shard_bucket (shard_id, buckets)
  select get_shard_id_for_distribution_column('workhorse.job', b), array_agg(b order by b)
    from generate_series(0, 4095) as b
   group by 1;
  return (select count(*) from workhorse.shard_bucket);
end $$;
select workhorse.refresh_shard_buckets();

-- A lapsed lease as workhorse.reap_expired_leases reads it from one shard.
create type workhorse.lapsed_lease as (
  id uuid, attempt integer, deadline timestamptz, lease_owner text, lease_expires_at timestamptz,
  cancel_requested boolean, cancel_requested_by text, cancel_reason text, next_state text, last_error jsonb
);

create view workhorse.idempotency_binding as
select b.scope, b.key_hash, b.job_id, b.mode, b.key_preview, b.key_length,
       array(select encode(substring(b.field_digests from i * 8 + 1 for 8), 'hex')
               from generate_series(0, 10) as i order by i) as field_digests,
       encode(b.request_digest, 'hex') as request_digest, b.ttl_ms, b.created_at, b.expires_at
  from workhorse.key_binding b;

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

