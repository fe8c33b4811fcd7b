-- The Citus variant of sql/functions/job_owns_live_key.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/job_owns_live_key.sql faf2cb8f9a295457

create or replace function workhorse.job_owns_live_key(p_job uuid) returns boolean
language plpgsql stable as $$
begin
  return exists (
    select 1 from workhorse.job j
      join workhorse.key_binding b
        on b.bucket = j.bucket and b.scope = j.key_scope and b.key_hash = j.key_hash and b.job_id = j.id
     where j.bucket = workhorse.id_bucket(p_job) and j.id = p_job and b.expires_at > now());
end $$;
