create or replace function workhorse.resume_queue(p_queue text, p_actor text, p_reason text) returns boolean
language plpgsql as $$
declare
  v_changed boolean;
begin
  delete from workhorse.queue_pause p where p.queue = p_queue;
  v_changed := found;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'resume_queue', 'queue:' || p_queue, p_reason,
          jsonb_build_object('resumed', case when v_changed then 1 else 0 end,
                             'status', case when v_changed then 'ok' else 'not_paused' end));
  if v_changed then
    perform pg_notify('workhorse_jobs', p_queue);
  end if;
  return v_changed;
end $$;
