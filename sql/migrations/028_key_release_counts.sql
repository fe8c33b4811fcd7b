-- Key releases counted by reason (docs/observability.md, "Decisions from the database"): /metrics
-- exports `workhorse_key_releases_total` per queue and reason from the `key_released` job events of
-- each span, read by time like the `debounced` events; only those are indexed.
create index if not exists job_event_key_released_idx on workhorse.job_event (at) where kind = 'key_released';
