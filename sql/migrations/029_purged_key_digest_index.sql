-- Find by key digest (the console's /find?digest=…, lib/console/reads/digest.ts) also lists the
-- purged jobs whose key had the digest: a purge releases the key but the job keeps its scope and key
-- hash. The digest is the key hash's first 6 bytes, and no index held them: the read walked every
-- purged job (job_rare_state_idx) and hex-encoded each one's key hash to compare, so its cost grew
-- with the number of purged jobs. This index holds those 6 bytes of the purged jobs only, newest purge
-- first under each, so the read is one index probe that stops after its 5 rows: an entry is 6 bytes
-- and a timestamp, and a job pays one when it is purged (rare); nothing else writes to it.
-- Built inside the migration's transaction: writes to workhorse.job wait while it builds (a few
-- seconds per million jobs). On the distributed layout (Citus) the index is made on every shard.
create index if not exists job_purged_key_digest_idx
  on workhorse.job (substring(key_hash from 1 for 6), purged_at desc)
  where state = 'purged' and key_hash is not null;
