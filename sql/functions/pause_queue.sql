-- Pause / resume one queue; one audit row each. Returns whether anything changed.
create or replace function workhorse.pause_queue(p_queue text, p_actor text, p_reason text) returns boolean
language plpgsql as $$
declare
  v_changed boolean;
begin
  insert into workhorse.queue_pause (queue, paused_by, reason) values (p_queue, p_actor, p_reason)
  on conflict (queue) do nothing;
  v_changed := found;
  insert into workhorse.operator_audit (actor, action, target, reason, result)
  values (p_actor, 'pause_queue', 'queue:' || p_queue, p_reason,
          jsonb_build_object('paused', case when v_changed then 1 else 0 end,
                             'status', case when v_changed then 'ok' else 'already_paused' end));
  return v_changed;
end $$;
