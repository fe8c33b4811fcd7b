-- A batch's field digests, per request in input order (null for a keyless one), checked (verified_field_digests.sql):
-- enqueue_batch's arrays as it takes them (every request's tags one after another, p_tag_counts each).
-- Called on a retried batch's path only (enqueue_batch_recall takes its result).
create or replace function workhorse.batch_field_digests(
  p_queues text[], p_types text[], p_payloads jsonb, p_run_ats timestamptz[], p_max_attempts integer[],
  p_retry_policies jsonb[], p_deadlines timestamptz[], p_execution_timeouts bigint[], p_concurrency_keys text[],
  p_tags text[], p_tag_counts integer[], p_ttls bigint[], p_key_hashes bytea[], p_field_digests bytea[])
returns bytea[] language plpgsql stable as $$
begin
  return (select array_agg(case when x.kh is not null then workhorse.verified_field_digests(x.o::integer, x.fd, x.computed) end
                   order by x.o)
    from (select u.*, case when u.kh is not null then
                   workhorse.request_field_digests(u.queue, u.type, coalesce(p_payloads -> (u.o::integer - 1), 'null'::jsonb),
                                                   u.run_at, u.max_attempts, u.retry_policy, u.deadline, u.timeout_ms,
                                                   u.concurrency_key,
                                                   coalesce(p_tags[u.tag_off + 1 : u.tag_off + u.tag_count], '{}'), u.ttl)
                 end as computed
            from (select v.*, (sum(v.tag_count) over (order by v.o) - v.tag_count)::integer as tag_off
                    from unnest(p_queues, p_types, p_run_ats, p_max_attempts, p_retry_policies, p_deadlines,
                                p_execution_timeouts, p_concurrency_keys, p_tag_counts, p_ttls, p_key_hashes,
                                p_field_digests) with ordinality
                         as v(queue, type, run_at, max_attempts, retry_policy, deadline, timeout_ms, concurrency_key,
                              tag_count, ttl, kh, fd, o)) u
          offset 0) x);
end $$;
