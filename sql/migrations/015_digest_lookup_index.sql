-- Find by key digest (the console's /find?digest=…, and the conflicts page's digest filter) reads
-- the observation log by key_digest, newest first. Without an index every lookup scanned the whole
-- table under its 500 ms statement timeout (at 2,000,000 observations most were cut short). With
-- (key_digest, id) a lookup is one index range read backwards, whatever the table's size.
--
-- Built inside the migration's transaction (not concurrently): writes to enqueue_observation (the
-- recorder's buffered flushes) wait while it builds, a few seconds per million rows. On the
-- distributed layout (Citus) enqueue_observation stays a local table on the coordinator, so this
-- index is all it needs there too (sql/distributed/layout.sql does not touch the table).
create index if not exists enqueue_observation_key_digest_idx
  on workhorse.enqueue_observation (key_digest, id desc);
