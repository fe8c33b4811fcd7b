-- The Citus variant of sql/functions/reap_expired_leases.sql (docs/scale-out.md); bring it in line when that file changes.
-- follows: sql/functions/reap_expired_leases.sql 1e181fc90f5f5070

-- Lapsed leases, shard by shard (FOR UPDATE SKIP LOCKED within one shard), as on one node: each gets
-- a lease_expired event and goes back to 'ready' for a new attempt (canceled instead when an
-- operator asked), or to 'failed' on its last attempt or past its deadline.
create or replace function workhorse.reap_expired_leases(p_queues text[], p_limit integer)
returns integer language plpgsql as $$
declare
  v_buckets integer[];
  v_now timestamptz := now();
  v_count integer := 0;
  v_n integer;
  v_rows workhorse.lapsed_lease[];
begin
  for v_buckets in select b.buckets from workhorse.shard_bucket b order by b.shard_id loop
    exit when v_count >= p_limit;
    select coalesce(array_agg(row(x.*)::workhorse.lapsed_lease), '{}') into v_rows
      from (select j.id, j.attempt, j.deadline, j.lease_owner, j.lease_expires_at, j.cancel_requested_at is not null,
                   j.cancel_requested_by, j.cancel_reason,
                   case when j.attempt >= j.max_attempts or j.deadline <= v_now then 'failed' else 'ready' end,
                   jsonb_build_object('name', 'LeaseExpired',
                     'message', format('attempt %s: lease held by %s lapsed at %s', j.attempt, j.lease_owner,
                                       j.lease_expires_at))
              from workhorse.job j
             where j.bucket = any (v_buckets) and j.state = 'active' and j.lease_expires_at < v_now
               and (p_queues is null or j.queue = any (p_queues))
             order by j.lease_expires_at
             limit p_limit - v_count
               for update of j skip locked) x;
    v_n := cardinality(v_rows);
    continue when v_n = 0;
    v_count := v_count + v_n;

    update workhorse.job j
       set state = r.next_state, lease_expires_at = null, lease_owner = null, updated_at = v_now,
           finished_at = case when r.next_state = 'failed' then v_now end,
           last_error = r.last_error -- formatted in the read (Citus runs no STABLE format() on columns in an UPDATE)
      from unnest(v_rows) r
     where j.bucket = any (v_buckets) and j.id = r.id;

    insert into workhorse.job_event (job_id, kind, data)
    select r.id, e.kind, e.data
      from unnest(v_rows) r
     cross join lateral (
       values (1, 'lease_expired', jsonb_build_object('attempt', r.attempt, 'worker', r.lease_owner,
                                                     'leaseExpiresAt', r.lease_expires_at)),
              (2, case when r.next_state = 'failed' and r.deadline <= v_now then 'deadline_exceeded' end,
                  jsonb_build_object('attempt', r.attempt, 'deadline', r.deadline)),
              (3, case when r.next_state = 'failed' then 'failed' end,
                  jsonb_build_object('attempt', r.attempt,
                                     'reason', case when r.deadline <= v_now then 'deadline_exceeded'
                                                    else 'max_attempts' end)),
              (0, case when r.next_state = 'ready' and r.cancel_requested then 'canceled' end,
                  jsonb_build_object('attempt', r.attempt, 'actor', r.cancel_requested_by, 'reason', r.cancel_reason))
     ) as e(ord, kind, data)
     where e.kind is not null
     order by r.id, e.ord;
    -- Jobs that end here (dead-lettered, or canceled instead of retried) release a held key (docs/
    -- enqueue.md, "Key lifetimes"); release_held_keys skips jobs without a lifetime. Rare, so no filter.
    perform workhorse.release_held_keys(array_agg(r.id),
                                        array_agg(case when r.next_state = 'failed' then 'failed' else 'canceled' end))
       from unnest(v_rows) r
     where r.next_state = 'failed' or r.cancel_requested
    having count(*) > 0;
  end loop;
  return v_count;
end $$;
