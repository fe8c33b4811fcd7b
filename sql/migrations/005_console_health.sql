-- Console health: the per-minute "succeeded / failed" series reads finished jobs by finish time.
-- Without this index that is a scan of every job; with it, a range over the jobs finished in the
-- window. Partial: pending and running jobs (finished_at null) never enter it, so enqueue pays
-- nothing and a worker pays one index entry when a job finishes.
create index job_finished_idx on workhorse.job (finished_at) where finished_at is not null;
