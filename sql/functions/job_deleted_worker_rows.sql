-- No foreign keys to workhorse.job (a FK would make TRUNCATE of the job table fail and cost a row
-- lock per insert); deleting or truncating jobs takes their checkpoints and slots with them.
create or replace function workhorse.job_deleted_worker_rows() returns trigger language plpgsql as $$
begin
  delete from workhorse.job_checkpoint c using deleted_jobs d where c.job_id = d.id;
  delete from workhorse.concurrency_slot s using deleted_jobs d where s.job_id = d.id;
  return null;
end $$;
