-- The producer's trace context (a W3C traceparent, `00-<trace id>-<span id>-<flags>`) stored with
-- the job when the enqueue call ran inside a sampled OpenTelemetry span, so the worker's span for
-- each attempt can link to it (docs/observability.md, "Traces"). Null without tracing. Bounded:
-- a traceparent is 55 characters; 256 leaves room for a later version of the format.
-- Adding a nullable column without a default rewrites nothing; on the distributed layout (Citus)
-- the ALTER propagates to every shard.
alter table workhorse.job add column if not exists trace_context text
  constraint job_trace_context_length check (trace_context is null or length(trace_context) <= 256);
