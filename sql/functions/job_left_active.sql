-- A job that leaves 'active' by any path (outcome, lease reaping, release, an operator's cancel)
-- frees its key. The WHEN clause keeps the trigger off every other update.
create or replace function workhorse.job_left_active() returns trigger language plpgsql as $$
begin
  delete from workhorse.concurrency_slot s where s.concurrency_key = old.concurrency_key and s.job_id = old.id;
  return null;
end $$;
