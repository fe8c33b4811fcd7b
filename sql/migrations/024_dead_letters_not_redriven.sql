-- Dead letters per queue for the state gauges (lib/enqueue/store/state-gauges.ts) count what the
-- dead-letter list shows by default: failed jobs not redriven yet (a redriven source keeps state
-- 'failed' and names its new job in redriven_to, migration 016). This index holds exactly those, so
-- the count stays an index-only scan of their queue values. job_failed_queue_idx (migration 019)
-- stays: the planner may use it for reads of a queue's failed jobs. A job pays one entry here when
-- it fails and loses it when redriven (redrive is rare); accepting a job writes nothing here.
-- Built inside the migration's transaction: writes to workhorse.job wait while it builds (a few
-- seconds per million jobs). On the distributed layout (Citus) the index is made on every shard.
create index if not exists job_dead_letter_queue_idx on workhorse.job (queue)
  where state = 'failed' and redriven_to is null;
