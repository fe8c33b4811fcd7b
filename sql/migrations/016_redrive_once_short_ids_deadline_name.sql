-- redriven_to: on a failed job, the job its latest redrive made (docs/operator-actions.md). A redrive
-- refuses a source that has one unless asked explicitly ("again"), and the dead-letter lists leave
-- such jobs out by default. It lives on the source's own row (the row redrive_jobs locks), so both
-- the refusal and the list filter read one row, on one node and on Citus alike.
alter table workhorse.job add column if not exists redriven_to uuid;

-- Jobs redriven before this column existed: the newest redrive each made (redrive_request holds one
-- row per redrive, on both layouts a plain table).
update workhorse.job s
   set redriven_to = r.job_id
  from (select distinct on (q.source_job_id) q.source_job_id, q.job_id
          from workhorse.redrive_request q
         order by q.source_job_id, q.created_at desc, q.job_id desc) r
 where s.id = r.source_job_id;

-- "Open job" by the short id tables show (the last 8 hex digits, …ab93e3f1): a suffix of a UUIDv7 is
-- its random part, so no primary-key range finds it. This index on the last 8 characters makes it one
-- index probe (a prefix, as the worker log prints, is a primary-key range and needs nothing). It
-- costs each accepted job one more small index entry (9 bytes of text). Built inside the migration's
-- transaction: writes to workhorse.job wait while it builds (a few seconds per million jobs).
create index if not exists job_id_tail_idx on workhorse.job (right(id::text, 8));

-- A deadline missed before the job ran was named DeadlineExceeded, one missed during a run
-- DeadlineExceededError, with two message formats: two dead-letter groups for one cause. claim_jobs
-- now records what the worker records; the dead letters made before are renamed to match.
update workhorse.job j
   set last_error = jsonb_build_object(
         'name', 'DeadlineExceededError',
         'message', format('The job''s deadline (%s) passed.',
                           to_char(j.deadline at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
         'code', 'DEADLINE_EXCEEDED')
 where j.state = 'failed' and j.last_error ->> 'name' = 'DeadlineExceeded' and j.deadline is not null;
