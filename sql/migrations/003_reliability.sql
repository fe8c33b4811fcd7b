-- Reliability fixes (issue 8).
--
-- Claim order: jobs due at the same time are claimed oldest first by (run_at, id). Ids are UUIDv7
-- made in the enqueuing process, so for jobs with one run_at (a batch, or requests in the same
-- millisecond) the id order is the order they were enqueued in. The pending index carries the id
-- so each per-queue scan still stops at its limit without a sort.
drop index workhorse.job_pending_idx;
create index job_pending_idx on workhorse.job (queue, run_at, id) where state in ('scheduled', 'ready');
