/**
 * Metrics and traces through `@opentelemetry/api` only: the application installs (or not) an SDK.
 * Without one the instruments are the API's no-ops; instruments are made once per `Queue` or
 * `Worker`, and the attribute sets are cached per (queue, outcome), so a call allocates nothing
 * more than its span handle. No attribute ever holds a key, a digest, a job id or a payload value;
 * a key's scope appears only when the application lists it in `TelemetryOptions.scopes`.
 * The names and units are listed in docs/observability.md.
 */
import {
  type Attributes,
  type Counter,
  type Histogram,
  isSpanContextValid,
  type Meter,
  type MeterProvider,
  metrics,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { EnqueueIdempotencyConflictError, WorkhorseError } from "./errors";
import type { EnqueueResult } from "./types";

/** `QueueOptions.telemetry` / `WorkerOptions.telemetry`. */
export interface TelemetryOptions {
  /** Default: the global one (`metrics.setGlobalMeterProvider`, which SDK setups call), read when the Queue or Worker is made. */
  meterProvider?: MeterProvider;
  /** Default: the global one (`trace.setGlobalTracerProvider`). */
  tracerProvider?: TracerProvider;
  /**
   * Key scopes to break enqueue decisions out by (the `workhorse.idempotency.scope` attribute), at
   * most 100. Other scopes are not recorded: scopes are the application's, and their number is not
   * bounded. Default none.
   */
  scopes?: readonly string[];
}

/** The instrumentation scope name (meter and tracer). */
export const INSTRUMENTATION_NAME = "workhorse";

/** Metric names, one place (tests and docs read them from here). */
export const METRICS = {
  sent: "messaging.client.sent.messages",
  operationDuration: "messaging.client.operation.duration",
  consumed: "messaging.client.consumed.messages",
  processDuration: "messaging.process.duration",
  decisions: "workhorse.enqueue.decisions",
  retries: "workhorse.enqueue.retries",
  retriesExhausted: "workhorse.enqueue.retries_exhausted",
  recoveredAccepts: "workhorse.enqueue.recovered_accepts",
  attempts: "workhorse.worker.attempts",
  operatorJobs: "workhorse.operator.jobs",
} as const;

/** The semantic conventions' advice for messaging durations, in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** An attempt's duration, in seconds: handlers run longer than a producer's round trip. */
const PROCESS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Each metric's unit and description; a duration's bucket boundaries. */
const INSTRUMENTS: Record<keyof typeof METRICS, { unit: string; description: string; buckets?: number[] }> = {
  sent: {
    unit: "{message}",
    description: "Requests the producer sent to PostgreSQL, by queue (error.type when the call failed).",
  },
  operationDuration: {
    unit: "s",
    description: "Duration of an enqueue call (one round trip, or several when a keyed call repeats itself).",
    buckets: DURATION_BUCKETS,
  },
  consumed: { unit: "{message}", description: "Jobs this worker claimed, by queue." },
  processDuration: {
    unit: "s",
    description: "Duration of an attempt, from its claim to its recorded outcome (error.type when it did not succeed).",
    buckets: PROCESS_BUCKETS,
  },
  decisions: {
    unit: "{request}",
    description:
      "What PostgreSQL decided per enqueue request, by queue and outcome (accepted, replayed, conflict, replaced, non_replaceable with its reason, coalesced).",
  },
  retries: {
    unit: "{try}",
    description: "Extra tries of keyed calls after a connection loss or a retryable SQLSTATE.",
  },
  retriesExhausted: {
    unit: "{call}",
    description:
      "Retried keyed calls whose last try still failed with a retryable error (connection lost, retryable SQLSTATE; the caller got it). A conflict or other refusal on a retry is not counted.",
  },
  recoveredAccepts: {
    unit: "{request}",
    description: "Requests a retry found accepted by an earlier try whose answer was lost (reported as accepted).",
  },
  attempts: {
    unit: "{attempt}",
    description:
      "Attempts by queue and result: succeeded, retry_scheduled, failed, lease_lost, canceled, released (given back at shutdown).",
  },
  operatorJobs: {
    unit: "{job}",
    description:
      "Jobs operators canceled (or asked to stop), redrove, purged, ran now or deleted from the dead letters.",
  },
};

/** The counter of `METRICS[metric]`, with its unit and description. */
export function counterOf(meter: Meter, metric: keyof typeof METRICS): Counter {
  const { unit, description } = INSTRUMENTS[metric];
  return meter.createCounter(METRICS[metric], { description, unit });
}

/** The histogram of `METRICS[metric]`, with its unit, description and bucket boundaries. */
export function histogramOf(meter: Meter, metric: keyof typeof METRICS): Histogram {
  const { unit, description, buckets } = INSTRUMENTS[metric];
  return meter.createHistogram(METRICS[metric], { description, unit, advice: { explicitBucketBoundaries: buckets } });
}

/** Attribute names: the messaging conventions' and ours. */
export const ATTR = {
  system: "messaging.system",
  destination: "messaging.destination.name",
  operation: "messaging.operation.name",
  operationType: "messaging.operation.type",
  batchCount: "messaging.batch.message_count",
  errorType: "error.type",
  outcome: "workhorse.enqueue.outcome",
  reason: "workhorse.enqueue.reason",
  scope: "workhorse.idempotency.scope",
  result: "workhorse.attempt.result",
  action: "workhorse.operator.action",
  attempt: "workhorse.attempt",
  workerId: "workhorse.worker.id",
} as const;

export const MESSAGING_SYSTEM = "workhorse";

/** Beyond this many distinct queues, attribute sets are made per call instead of cached. */
const MAX_CACHED_QUEUES = 1000;
const MAX_SCOPES = 100;

/** What operators did, counted in jobs (`workhorse.operator.action`). */
export type OperatorAction = "cancel" | "cancel_requested" | "redrive" | "purge" | "run_now" | "delete_failed";

/** The error's stable `code` (every Workhorse error has one), else `_OTHER` (bounded, as the conventions ask). */
export function errorTypeOf(err: unknown): string {
  return err instanceof WorkhorseError ? err.code : "_OTHER";
}

/** A cache of frozen attribute sets: per queue, per variant string. Bounded in queues. */
export class AttributeCache {
  private readonly byQueue = new Map<string, Map<string, Attributes>>();

  get(queue: string, variant: string, make: () => Attributes): Attributes {
    let m = this.byQueue.get(queue);
    if (!m) {
      if (this.byQueue.size >= MAX_CACHED_QUEUES) return make();
      m = new Map();
      this.byQueue.set(queue, m);
    }
    let a = m.get(variant);
    if (!a) {
      a = Object.freeze(make());
      m.set(variant, a);
    }
    return a;
  }
}

const PRODUCER = { kind: SpanKind.PRODUCER } as const;

/** One queue's instruments and tracer (`QueueContext.telemetry`). */
export class QueueTelemetry {
  readonly tracer: Tracer;
  private readonly sent: Counter;
  private readonly duration: Histogram;
  private readonly decisions: Counter;
  private readonly retries: Counter;
  private readonly exhausted: Counter;
  private readonly recovered: Counter;
  private readonly operator: Counter;
  private readonly scopes: ReadonlySet<string>;
  private readonly attrs = new AttributeCache();
  private readonly spanNames = new Map<string, string>();
  private readonly base: Attributes = Object.freeze({ [ATTR.system]: MESSAGING_SYSTEM });
  /** A batch over several queues: no destination. */
  private readonly mixed: Attributes = Object.freeze({ ...this.base, [ATTR.operation]: "send" });

  constructor(options: TelemetryOptions = {}) {
    const meter = meterOf(options);
    this.tracer = tracerOf(options);
    this.scopes = new Set(options.scopes ?? []);
    this.sent = counterOf(meter, "sent");
    this.duration = histogramOf(meter, "operationDuration");
    this.decisions = counterOf(meter, "decisions");
    this.retries = counterOf(meter, "retries");
    this.exhausted = counterOf(meter, "retriesExhausted");
    this.recovered = counterOf(meter, "recoveredAccepts");
    this.operator = counterOf(meter, "operatorJobs");
  }

  private queueAttrs(queue: string): Attributes {
    return this.attrs.get(queue, "", () => ({ ...this.base, [ATTR.destination]: queue, [ATTR.operation]: "send" }));
  }

  private errorAttrs(queue: string | null, errorType: string): Attributes {
    return this.attrs.get(queue ?? "", `!${errorType}`, () => ({
      ...this.base,
      ...(queue === null ? {} : { [ATTR.destination]: queue }),
      [ATTR.operation]: "send",
      [ATTR.errorType]: errorType,
    }));
  }

  private decisionAttrs(queue: string, outcome: string, reason: string | null, scope: string | null): Attributes {
    const listed = scope !== null && this.scopes.has(scope) ? scope : null;
    const variant =
      reason === null && listed === null ? outcome : `${outcome}\u0000${reason ?? ""}\u0000${listed ?? ""}`;
    return this.attrs.get(queue, variant, () => ({
      ...this.base,
      [ATTR.destination]: queue,
      [ATTR.outcome]: outcome,
      ...(reason === null ? {} : { [ATTR.reason]: reason }),
      ...(listed === null ? {} : { [ATTR.scope]: listed }),
    }));
  }

  /** `send <queue>`, made once per queue (bounded as the attribute cache is). */
  private sendName(queue: string): string {
    let name = this.spanNames.get(queue);
    if (name === undefined) {
      name = `send ${queue}`;
      if (this.spanNames.size < 1000) this.spanNames.set(queue, name);
    }
    return name;
  }

  /** The producer span of one enqueue call; a no-op span without a tracer provider. */
  startSend(queues: readonly { queue: string }[]): Span {
    const one = sameQueue(queues);
    const span = this.tracer.startSpan(one === null ? "send" : this.sendName(one), PRODUCER);
    if (span.isRecording()) {
      span.setAttributes({ [ATTR.system]: MESSAGING_SYSTEM, [ATTR.operation]: "send", [ATTR.operationType]: "send" });
      if (one !== null) span.setAttribute(ATTR.destination, one);
      if (queues.length > 1) span.setAttribute(ATTR.batchCount, queues.length);
    }
    return span;
  }

  /** Records a finished call: per request its decision, the call's duration, the span's outcome. */
  sendSucceeded(
    span: Span,
    startedAt: number,
    requests: readonly { queue: string; keyed: { key: { scope: string } } | null }[],
    results: readonly EnqueueResult[],
  ): void {
    for (let i = 0; i < requests.length; i++) {
      const req = requests[i] as (typeof requests)[number];
      const r = results[i] as EnqueueResult;
      this.sent.add(1, this.queueAttrs(req.queue));
      const reason = r.outcome === "non_replaceable" ? r.reason : null;
      this.decisions.add(1, this.decisionAttrs(req.queue, r.outcome, reason, req.keyed?.key.scope ?? null));
    }
    const one = sameQueue(requests);
    this.duration.record((performance.now() - startedAt) / 1000, one === null ? this.mixed : this.queueAttrs(one));
    if (span.isRecording()) {
      if (results.length === 1) {
        const r = results[0] as EnqueueResult;
        span.setAttribute(ATTR.outcome, r.outcome);
        if (r.outcome === "non_replaceable") span.setAttribute(ATTR.reason, r.reason);
      } else {
        span.setAttribute(ATTR.outcome, [...new Set(results.map((r) => r.outcome))].sort());
      }
    }
    span.end();
  }

  /**
   * Records a failed call. A conflict counts as that request's decision (`conflict`) and is an
   * error event on the span naming the conflicting fields, never the key or the digests.
   */
  sendFailed(
    span: Span,
    startedAt: number,
    requests: readonly { queue: string; keyed: { key: { scope: string } } | null }[],
    err: unknown,
  ): void {
    const errorType = errorTypeOf(err);
    const conflict = err instanceof EnqueueIdempotencyConflictError ? err : null;
    for (const req of requests) this.sent.add(1, this.errorAttrs(req.queue, errorType));
    const at = conflict ? requests[conflict.ordinal - 1] : undefined;
    if (at) this.decisions.add(1, this.decisionAttrs(at.queue, "conflict", null, at.keyed?.key.scope ?? null));
    this.duration.record((performance.now() - startedAt) / 1000, this.errorAttrs(sameQueue(requests), errorType));
    if (span.isRecording()) {
      span.setAttribute(ATTR.errorType, errorType);
      if (conflict) {
        span.setAttribute(ATTR.outcome, "conflict");
        span.addEvent("workhorse.idempotency_conflict", {
          "workhorse.conflicting_fields": [...conflict.conflictingFields],
          ...(requests.length > 1 ? { "workhorse.ordinal": conflict.ordinal } : {}),
        });
      }
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    }
    span.end();
  }

  retried(): void {
    this.retries.add(1, this.base);
  }

  retriesExhausted(): void {
    this.exhausted.add(1, this.base);
  }

  recoveredAccept(queue: string): void {
    this.recovered.add(1, this.queueAttrs(queue));
  }

  /** Jobs an operator action changed (`count` 0 records nothing). */
  operatorAction(action: OperatorAction, count: number): void {
    if (count > 0)
      this.operator.add(
        count,
        this.attrs.get("", `@${action}`, () => ({ [ATTR.action]: action })),
      );
  }
}

/**
 * A sampled span's W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), stored with the jobs a
 * call accepts; null for the API's no-op spans and unsampled ones (nothing is stored then).
 */
export function traceparentOf(span: Span): string | null {
  const c = span.spanContext();
  if (!(c.traceFlags & TraceFlags.SAMPLED) || !isSpanContextValid(c)) return null;
  return `00-${c.traceId}-${c.spanId}-${c.traceFlags.toString(16).padStart(2, "0")}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a stored `traceparent` names (remote), or null when it is not one. */
export function spanContextOf(traceparent: string | null): SpanContext | null {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return null;
  const c = {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: Number.parseInt(m[3] as string, 16),
    isRemote: true,
  };
  return isSpanContextValid(c) ? c : null;
}

/** The queue every request names, or null when they differ (or there are none). */
function sameQueue(requests: readonly { queue: string }[]): string | null {
  const first = requests[0]?.queue;
  if (first === undefined) return null;
  for (let i = 1; i < requests.length; i++) if ((requests[i] as { queue: string }).queue !== first) return null;
  return first;
}

/** A meter from these options (the Worker's instruments are made in worker/telemetry.ts). */
export function meterOf(options: TelemetryOptions | undefined): Meter {
  return (options?.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME);
}

/** A tracer from these options. */
export function tracerOf(options: TelemetryOptions | undefined): Tracer {
  return (options?.tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_NAME);
}

/** Checks `TelemetryOptions` (`option`: the name to report), returning an error rule or null. */
export function telemetryProblem(t: unknown): string | null {
  if (t === undefined) return null;
  if (typeof t !== "object" || t === null) return "must be an object { meterProvider?, tracerProvider?, scopes? }";
  const o = t as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    if (!["meterProvider", "tracerProvider", "scopes"].includes(name)) return `has an unknown option ${name}`;
  }
  if (o.meterProvider !== undefined && typeof (o.meterProvider as MeterProvider).getMeter !== "function") {
    return "meterProvider must be an OpenTelemetry MeterProvider";
  }
  if (o.tracerProvider !== undefined && typeof (o.tracerProvider as TracerProvider).getTracer !== "function") {
    return "tracerProvider must be an OpenTelemetry TracerProvider";
  }
  if (
    o.scopes !== undefined &&
    (!Array.isArray(o.scopes) || o.scopes.length > MAX_SCOPES || !o.scopes.every((s) => typeof s === "string"))
  ) {
    return `scopes must be an array of at most ${MAX_SCOPES} scope names`;
  }
  return null;
}
