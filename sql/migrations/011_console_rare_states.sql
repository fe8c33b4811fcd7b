-- The jobs page on a rare terminal state tab (failed, canceled, purged), newest first. Without this
-- index PostgreSQL walks job_pkey backwards and filters: at 1,000,000 jobs the purged tab (0.1 % of
-- rows) read ~50,000 rows and ~1,650 buffers per page (13 ms); with it, a backward range scan of 51
-- entries (~54 buffers, 0.6 ms).
-- Partial on the rare states only: enqueue (ready/scheduled), claim (active) and success
-- (succeeded) never write to it; a job pays one index entry when it fails, is canceled or purged.
-- The other states are served elsewhere: active by job_lease_idx, pending by job_pending_idx,
-- succeeded (the common state) by job_pkey. docs/console.md, "How the pages stay fast".
create index job_rare_state_idx on workhorse.job (state, id)
  where state in ('failed', 'canceled', 'purged');
