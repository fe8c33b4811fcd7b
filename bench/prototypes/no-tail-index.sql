-- The short-id expression index gone (what an accept pays for "Open job" by …1a2b3c4d).
drop index workhorse.job_id_tail_idx;
