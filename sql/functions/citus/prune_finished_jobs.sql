-- The Citus variant of sql/functions/prune_finished_jobs.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/prune_finished_jobs.sql 2b8728dc6b342ab5

-- Retention, shard by shard (SKIP LOCKED works within one shard): up to p_limit terminal jobs that
-- became terminal before now() - p_older_than_ms, oldest first within each shard, never one that owns
-- a live key (a colocated join: the binding is on the job's shard), with their events, checkpoints
-- and redrive requests. The job's expired binding goes with it (shard trigger).
create or replace function workhorse.prune_finished_jobs(p_older_than_ms bigint, p_limit integer)
returns table (jobs_deleted integer, events_deleted integer)
language plpgsql as $$
#variable_conflict use_column
declare
  v_buckets integer[];
  v_ids uuid[];
  v_now timestamptz := now();
  v_jobs integer := 0;
  v_events integer := 0;
  v_n integer;
begin
  for v_buckets in select b.buckets from workhorse.shard_bucket b order by b.shard_id loop
    exit when v_jobs >= p_limit;
    select coalesce(array_agg(d.id), '{}') into v_ids
      from (select j.id from workhorse.job j
             where j.bucket = any (v_buckets)
               and j.state in ('succeeded', 'failed', 'canceled', 'purged')
               and j.updated_at < v_now - p_older_than_ms * interval '1 millisecond'
               and not exists (
                     select 1 from workhorse.key_binding b
                      where b.bucket = any (v_buckets) and b.bucket = j.bucket and b.scope = j.key_scope
                        and b.key_hash = j.key_hash and b.job_id = j.id and b.expires_at > v_now)
             order by j.updated_at
             limit p_limit - v_jobs
               for update of j skip locked) d;
    continue when cardinality(v_ids) = 0;
    delete from workhorse.job_event e where e.job_id = any (v_ids);
    get diagnostics v_n = row_count;
    v_events := v_events + v_n;
    delete from workhorse.job_checkpoint c where c.job_id = any (v_ids);
    delete from workhorse.redrive_request q where q.source_job_id = any (v_ids);
    delete from workhorse.job j where j.bucket = any (v_buckets) and j.id = any (v_ids);
    v_jobs := v_jobs + cardinality(v_ids);
  end loop;
  return query select v_jobs, v_events;
end $$;
