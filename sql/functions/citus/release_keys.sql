-- The Citus variant of sql/functions/release_keys.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/release_keys.sql 2ec62d19dda89cc4

-- Purge by ids (operator), job by job on each job's shard; then the bindings the purged jobs own are
-- released through a colocated join (job and binding share the bucket). One audit row.
create or replace function workhorse.release_keys(p_jobs uuid[]) returns integer
language plpgsql as $$
declare
  v_released integer;
begin
  delete from workhorse.key_binding b
   using workhorse.job j
   where j.id = any (p_jobs) and b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash
     and b.job_id = j.id;
  get diagnostics v_released = row_count;
  return v_released;
end $$;
