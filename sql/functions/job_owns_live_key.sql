-- True while this job owns a live binding (retention must keep such a job: a replay returns it).
-- One primary-key probe on the job, one on the binding.
create or replace function workhorse.job_owns_live_key(p_job uuid) returns boolean
language sql stable as $$
  select exists (
    select 1 from workhorse.job j
      join workhorse.key_binding b on b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
     where j.id = p_job and b.expires_at > now())
$$;
