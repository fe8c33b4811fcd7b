create or replace function workhorse.job_truncated_worker_rows() returns trigger language plpgsql as $$
begin
  truncate workhorse.job_checkpoint, workhorse.concurrency_slot;
  return null;
end $$;
