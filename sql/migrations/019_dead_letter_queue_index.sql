-- Dead letters per queue for the state gauges (lib/enqueue/store/state-gauges.ts): the failed jobs'
-- queues alone, so the count per queue is an index-only scan of a small index (its queue values are
-- deduplicated: about 45 pages for 50,000 failed jobs) instead of a visit of every failed job's heap
-- page. An entry is written when a job fails (that update changes `state`, so it is never HOT and
-- already writes every index whose predicate it meets); accepting a job writes nothing to it.
-- Built inside the migration's transaction: writes to workhorse.job wait while it builds (a few
-- seconds per million jobs). On the distributed layout (Citus) the index is made on every shard.
create index if not exists job_failed_queue_idx on workhorse.job (queue) where state = 'failed';
