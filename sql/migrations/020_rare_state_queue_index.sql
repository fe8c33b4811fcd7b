-- The jobs page with a queue filter on a rare terminal state tab (failed, canceled, purged), newest
-- first. The queue filter is a prefix, so job_rare_state_idx (state, id) alone served it by walking
-- every entry of the state and discarding the other queues' jobs (at 1,000,000 jobs, `reports` on
-- the failed tab: ~20,000 rows and ~1,000 buffers per page). With (state, queue, id) the console
-- finds the state's queue names (one probe per name) and reads each matching queue's newest entries
-- in id order (lib/enqueue/store/console-lists.ts, rareStateQueueRows).
-- Partial on the rare states like job_rare_state_idx: accepting a job (ready/scheduled), claiming
-- it and its success write nothing here; a job pays one entry when it fails, is canceled or purged.
-- Built inside the migration's transaction: writes to workhorse.job wait while it builds (a few
-- seconds per million jobs). On the distributed layout (Citus) the index is made on every shard.
create index if not exists job_rare_state_queue_idx on workhorse.job (state, queue, id)
  where state in ('failed', 'canceled', 'purged');
