-- Retention: deletes up to p_limit terminal jobs that became terminal before now() - p_older_than_ms,
-- oldest first, SKIP LOCKED, never one that owns a live key (workhorse.job_owns_live_key), with their
-- events and redrive requests. Returns the jobs and events deleted.
create or replace function workhorse.prune_finished_jobs(p_older_than_ms bigint, p_limit integer)
returns table (jobs_deleted integer, events_deleted integer)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_events integer;
begin
  select coalesce(array_agg(d.id), '{}') into v_ids
    from (select j.id from workhorse.job j
           where j.state in ('succeeded', 'failed', 'canceled', 'purged')
             and j.updated_at < now() - p_older_than_ms * interval '1 millisecond'
             and not workhorse.job_owns_live_key(j.id)
           order by j.updated_at
           limit p_limit
             for update of j skip locked) d;
  delete from workhorse.job_event e where e.job_id = any (v_ids);
  get diagnostics v_events = row_count;
  delete from workhorse.redrive_request q where q.source_job_id = any (v_ids);
  delete from workhorse.job j where j.id = any (v_ids);
  return query select cardinality(v_ids), v_events;
end $$;
