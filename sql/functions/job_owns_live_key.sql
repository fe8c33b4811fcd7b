-- True while this job owns a live binding (retention must keep such a job: a replay returns it).
-- One primary-key probe on the job, one on the binding.
create or replace function workhorse.job_owns_live_key(p_job uuid) returns boolean
-- On Citus a PL/pgSQL body (Citus plans no parameterised statements in SQL functions).
language sql stable --@single
--@citus+ language plpgsql stable
as $$
--@citus+ begin
  select exists (
  --@citus return exists (
    select 1 from workhorse.job j
      join workhorse.key_binding b on b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
      --@citus join workhorse.key_binding b
      --@citus+   on b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
     where j.id = p_job and b.expires_at > now())
     --@citus where j.bucket = workhorse.id_bucket(p_job) and j.id = p_job and b.expires_at > now());
$$;
--@citus end $$;
