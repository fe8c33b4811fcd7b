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
