-- Debounce and throttle (issue 11): the `replaced`, `non_replaceable` and `coalesced` outcomes,
-- decided inside enqueue_one / enqueue_batch like every other keyed outcome. docs/decisions.md,
-- "Debounce and throttle", gives the rules and why they are shaped this way.
--
-- Shape: a debounce binding remembers how it was asked for (schedule, max wait); its window is the
-- binding's ttl_ms, its first acceptance the binding's created_at (never moved by a replacement), so
-- the max-wait deadline is created_at + max_wait_ms. A replacement rewrites the job row in place
-- (same id) and appends a `debounced` job event with the prior and new request digests.
--
-- The idempotency path is unchanged: enqueue_one's first statement branches off debounce requests;
-- a throttle request takes the idempotency path and is reported `coalesced` where idempotency says
-- `replayed`.

alter table workhorse.key_binding
  add column schedule    text check (schedule in ('reset', 'preserve')),
  add column max_wait_ms workhorse.duration_ms;

-- The console's per-minute `replaced` count reads debounced events by time; only those are indexed.
create index job_event_debounced_idx on workhorse.job_event (at) where kind = 'debounced';
