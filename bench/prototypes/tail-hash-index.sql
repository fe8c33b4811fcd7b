-- The short-id lookup through a hash index on the same expression (4-byte hash codes, one bucket
-- page per probe) instead of a B-tree.
drop index workhorse.job_id_tail_idx;
create index job_id_tail_hash_idx on workhorse.job using hash (right(id::text, 8));
