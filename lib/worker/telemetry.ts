/**
 * The worker's metrics and spans (docs/observability.md), read off the events it emits: a claim
 * counts a consumed message and opens the attempt's consumer span (the handler runs inside it), the
 * outcome closes it and counts the attempt by result with its duration. Through
 * `@opentelemetry/api` only; never a job id, key or payload value as an attribute.
 */
import { type Attributes, context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import {
  ATTR,
  AttributeCache,
  counterOf,
  histogramOf,
  MESSAGING_SYSTEM,
  meterOf,
  spanContextOf,
  type TelemetryOptions,
  tracerOf,
} from "../enqueue/telemetry";
import type { ClaimedJob, WorkerEvent } from "./types";

/** What became of an attempt (`workhorse.attempt.result`). */
export type AttemptResult = "succeeded" | "retry_scheduled" | "failed" | "lease_lost" | "canceled" | "released";

const CONSUMER = { kind: SpanKind.CONSUMER } as const;

interface Open {
  span: Span;
  startedAt: number;
}

export class WorkerTelemetry {
  private readonly tracer;
  private readonly consumed;
  private readonly duration;
  private readonly attempts;
  private readonly attrs = new AttributeCache();
  private readonly open = new WeakMap<ClaimedJob, Open>();

  constructor(
    options: TelemetryOptions | undefined,
    private readonly workerId: string,
  ) {
    const meter = meterOf(options);
    this.tracer = tracerOf(options);
    this.consumed = counterOf(meter, "consumed");
    this.duration = histogramOf(meter, "processDuration");
    this.attempts = counterOf(meter, "attempts");
  }

  private queueAttrs(queue: string, operation: string): Attributes {
    return this.attrs.get(queue, operation, () => ({
      [ATTR.system]: MESSAGING_SYSTEM,
      [ATTR.destination]: queue,
      [ATTR.operation]: operation,
    }));
  }

  private resultAttrs(queue: string, result: AttemptResult, errorType: string | null): Attributes {
    return this.attrs.get(queue, `${result}\u0000${errorType ?? ""}`, () => ({
      [ATTR.system]: MESSAGING_SYSTEM,
      [ATTR.destination]: queue,
      [ATTR.operation]: "process",
      [ATTR.result]: result,
      ...(errorType === null ? {} : { [ATTR.errorType]: errorType }),
    }));
  }

  /** Called with every worker event before the application's `onEvent`. */
  observe(e: WorkerEvent): void {
    switch (e.kind) {
      case "claimed":
        this.claimed(e.job);
        break;
      case "succeeded":
        this.finish(e.job, "succeeded", null);
        break;
      case "retry_scheduled":
        this.finish(e.job, "retry_scheduled", e.cause);
        break;
      case "failed":
        this.finish(e.job, "failed", e.cause);
        break;
      case "canceled":
        this.finish(e.job, "canceled", "canceled");
        break;
      case "stale":
        this.finish(e.job, "lease_lost", "lease_lost");
        break;
      case "released":
        this.finish(e.job, "released", null);
        break;
      case "lease_lost":
      case "abandoned":
      case "checkpoint_saved":
        this.open.get(e.job)?.span.addEvent(`workhorse.${e.kind}`);
        break;
    }
  }

  private claimed(job: ClaimedJob): void {
    this.consumed.add(1, this.queueAttrs(job.queue, "claim"));
    const producer = spanContextOf(job.traceContext);
    // Linked, not parented: the attempt runs in its own trace (a job may run long after, and more
    // than once); the link leads back to the enqueue call that made it.
    const span = this.tracer.startSpan(
      `process ${job.queue}`,
      producer ? { kind: SpanKind.CONSUMER, links: [{ context: producer }] } : CONSUMER,
    );
    if (span.isRecording()) {
      span.setAttributes({
        [ATTR.system]: MESSAGING_SYSTEM,
        [ATTR.destination]: job.queue,
        [ATTR.operation]: "process",
        [ATTR.operationType]: "process",
        [ATTR.attempt]: job.attempt,
        [ATTR.workerId]: this.workerId,
      });
    }
    this.open.set(job, { span, startedAt: performance.now() });
  }

  private finish(job: ClaimedJob, result: AttemptResult, errorType: string | null): void {
    const o = this.open.get(job);
    if (!o) return;
    this.open.delete(job);
    const attrs = this.resultAttrs(job.queue, result, errorType);
    this.attempts.add(1, attrs);
    this.duration.record((performance.now() - o.startedAt) / 1000, attrs);
    if (o.span.isRecording()) {
      o.span.setAttribute(ATTR.result, result);
      if (errorType !== null) {
        o.span.setAttribute(ATTR.errorType, errorType);
        o.span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
      }
    }
    o.span.end();
  }

  /** Ends the attempt's span if no outcome did (its write gave up; the lease lapses). */
  settle(job: ClaimedJob): void {
    const o = this.open.get(job);
    if (!o) return;
    this.open.delete(job);
    o.span.end();
  }

  /** Runs the handler inside the attempt's span, so the spans it makes are its children. */
  within<T>(job: ClaimedJob, fn: () => T): T {
    const o = this.open.get(job);
    return o ? context.with(trace.setSpan(context.active(), o.span), fn) : fn();
  }
}
