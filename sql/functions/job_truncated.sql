create or replace function workhorse.job_truncated() returns trigger language plpgsql as $$
begin
  truncate workhorse.key_binding;
  return null;
end $$;
