-- Prototype A: stop PL/pgSQL re-planning every statement of the enqueue decision on every call.
-- The statements take array/jsonb parameters whose custom plans never look worse than the generic
-- one, so the plan cache keeps building a custom plan per call (planning dominated the profile).
alter function workhorse.enqueue(jsonb, boolean) set plan_cache_mode = force_generic_plan;
alter function workhorse.check_conflicts(workhorse.enqueue_request[], workhorse.enqueue_key[]) set plan_cache_mode = force_generic_plan;
