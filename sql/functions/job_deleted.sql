-- A deleted or truncated job takes its binding with it (docs/enqueue.md, expiry), found through the job's key.
create or replace function workhorse.job_deleted() returns trigger language plpgsql as $$
begin
  delete from workhorse.key_binding b using deleted_jobs d
   where b.scope = d.key_scope and b.key_hash = d.key_hash and b.job_id = d.id;
  return null;
end $$;
