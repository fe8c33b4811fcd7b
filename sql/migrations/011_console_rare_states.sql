-- The jobs page filtered by a rare terminal state (failed, canceled, purged), optionally with a
-- queue, newest first. Without this index PostgreSQL walks job_pkey backwards and filters: at
-- 1,000,000 jobs, "queue = reports and state = failed" (0.25 % of rows) read ~16,000 rows and
-- ~530 buffers per page. With it, such a page is a backward range scan of 51 entries.
-- Partial on the rare states only: enqueue (ready/scheduled), claim (active) and success
-- (succeeded) never touch it; a job pays one index entry when it fails, is canceled or purged.
-- The other states are served elsewhere: active by job_lease_idx, pending by job_pending_idx,
-- succeeded (the common state) by job_pkey. docs/console.md, "How the pages stay fast".
create index job_rare_state_idx on workhorse.job (state, queue, id)
  where state in ('failed', 'canceled', 'purged');
