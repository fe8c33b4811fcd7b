-- Releases every binding the given jobs own, and only those (bulk purge). Returns how many.
create or replace function workhorse.release_keys(p_jobs uuid[]) returns integer
language plpgsql as $$
declare
  v_released integer;
begin
  delete from workhorse.key_binding b
   using workhorse.job j
   where j.id = any (p_jobs) and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id;
   --@citus where j.id = any (p_jobs) and b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash
   --@citus+   and b.job_id = j.id;
  get diagnostics v_released = row_count;
  return v_released;
end $$;
