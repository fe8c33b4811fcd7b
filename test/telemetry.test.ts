// Metrics and spans read from the OpenTelemetry SDK's own in-memory readers, over real PostgreSQL:
// names, units, attributes, and that no key, digest, job id or payload value is ever an attribute.
import { type Attributes, context, trace } from "@opentelemetry/api";
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  MetricReader,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  StackContextManager,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, type Queue, type WorkerEvent } from "../lib/enqueue";
import { setupQueueTests, waitFor, workerStarter } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());
const startWorker = workerStarter(t.pool, { pollIntervalMs: 25, reapIntervalMs: 0, leaseMs: 5000 });

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function telemetry(scopes?: string[]) {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return {
    options: { meterProvider, tracerProvider, ...(scopes ? { scopes } : {}) },
    async metrics(): Promise<MetricData[]> {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    },
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
  };
}

/** The sum of a counter's points whose attributes include `match`. */
function total(all: MetricData[], name: string, match: Attributes = {}): number {
  const m = all.find((x) => x.descriptor.name === name);
  if (!m) return 0;
  let sum = 0;
  for (const p of m.dataPoints) {
    if (Object.entries(match).every(([k, v]) => p.attributes[k] === v)) sum += p.value as number;
  }
  return sum;
}

/** Every attribute value anywhere in these metrics and spans, as strings. */
function everyAttributeValue(all: MetricData[], spans: ReadableSpan[]): string[] {
  const out: string[] = [];
  const add = (a: Attributes) => {
    for (const v of Object.values(a)) out.push(...(Array.isArray(v) ? v.map(String) : [String(v)]));
  };
  for (const m of all) for (const p of m.dataPoints) add(p.attributes);
  for (const s of spans) {
    add(s.attributes);
    for (const e of s.events) add(e.attributes ?? {});
  }
  return out;
}

const KEY = `secret-order-key-${Date.now()}`;
const PAYLOAD_VALUE = "payload-value-7f3a";

describe("enqueue metrics and producer spans", () => {
  let tel: ReturnType<typeof telemetry>;
  let q: Queue;
  const secrets: string[] = [KEY, PAYLOAD_VALUE];

  beforeAll(async () => {
    tel = telemetry(["listed-scope"]);
    q = t.queue({ telemetry: tel.options });
    const a = await q.enqueueWithResult("t", { v: PAYLOAD_VALUE }, { queue: "billing", idempotency: { key: KEY } });
    secrets.push(a.jobId, a.keyDigest as string);
    await q.enqueueWithResult("t", { v: PAYLOAD_VALUE }, { queue: "billing", idempotency: { key: KEY } });
    await q.enqueueWithResult("t", { v: PAYLOAD_VALUE }, { queue: "billing", idempotency: { key: KEY } });
    const conflict = await q
      .enqueue("t", { v: "other" }, { queue: "billing", idempotency: { key: KEY } })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
    const c = conflict as EnqueueIdempotencyConflictError;
    secrets.push(c.storedRequestDigest, c.rejectedRequestDigest, c.keyPreview);
    const listed = await q.enqueueWithResult(
      "t",
      {},
      { queue: "mail", idempotency: { key: KEY, scope: "listed-scope" } },
    );
    secrets.push(listed.jobId);
    const [b1, b2] = await q.enqueueManyWithResults([
      { type: "t", payload: 1, options: { queue: "mail" } },
      { type: "t", payload: 2, options: { queue: "mail" } },
    ]);
    secrets.push(b1?.jobId as string, b2?.jobId as string);
    const nr = await q.enqueueWithResult(
      "t",
      {},
      { queue: "mail", debounce: { key: KEY, scope: "listed-scope", windowMs: 60_000 } },
    );
    expect(nr.outcome).toBe("non_replaceable");
  });

  test("decisions are counted per queue and outcome; non_replaceable carries its reason; scope only when listed", async () => {
    const all = await tel.metrics();
    const d = "workhorse.enqueue.decisions";
    expect(total(all, d, { "messaging.destination.name": "billing", "workhorse.enqueue.outcome": "accepted" })).toBe(1);
    expect(total(all, d, { "messaging.destination.name": "billing", "workhorse.enqueue.outcome": "replayed" })).toBe(2);
    expect(total(all, d, { "messaging.destination.name": "billing", "workhorse.enqueue.outcome": "conflict" })).toBe(1);
    expect(total(all, d, { "messaging.destination.name": "mail", "workhorse.enqueue.outcome": "accepted" })).toBe(3);
    expect(
      total(all, d, {
        "workhorse.enqueue.outcome": "non_replaceable",
        "workhorse.enqueue.reason": "incompatible_key_mode",
        "workhorse.idempotency.scope": "listed-scope",
      }),
    ).toBe(1);
    expect(total(all, d, { "workhorse.idempotency.scope": "listed-scope" })).toBe(2);
    // The default scope was not listed: no point names it.
    const points = all.find((m) => m.descriptor.name === d)?.dataPoints ?? [];
    expect(points.filter((p) => p.attributes["workhorse.idempotency.scope"] === "default")).toEqual([]);
    for (const p of points) expect(p.attributes["messaging.system"]).toBe("workhorse");
    const desc = all.find((m) => m.descriptor.name === d)?.descriptor;
    expect(desc?.unit).toBe("{request}");
  });

  test("messaging.client.sent.messages counts requests, with error.type for the conflict", async () => {
    const all = await tel.metrics();
    const s = "messaging.client.sent.messages";
    expect(all.find((m) => m.descriptor.name === s)?.descriptor.unit).toBe("{message}");
    expect(total(all, s, { "messaging.destination.name": "billing", "messaging.operation.name": "send" })).toBe(4);
    expect(total(all, s, { "error.type": "ENQUEUE_IDEMPOTENCY_CONFLICT" })).toBe(1);
    expect(total(all, s, { "messaging.destination.name": "mail" })).toBe(4);
  });

  test("messaging.client.operation.duration is a histogram in seconds, one point per call", async () => {
    const all = await tel.metrics();
    const h = all.find((m) => m.descriptor.name === "messaging.client.operation.duration");
    expect(h?.descriptor.unit).toBe("s");
    expect(h?.dataPointType).toBe(DataPointType.HISTOGRAM);
    let calls = 0;
    for (const p of h?.dataPoints ?? []) {
      const v = p.value as { count: number; max?: number };
      calls += v.count;
      expect(v.max).toBeLessThan(30);
    }
    expect(calls).toBe(7);
  });

  test("one producer span per call, outcome and queue as attributes, the conflict an error event without key or digest", async () => {
    const spans = tel.spans().filter((s) => s.name.startsWith("send"));
    expect(spans.map((s) => s.name)).toEqual([
      "send billing",
      "send billing",
      "send billing",
      "send billing",
      "send mail",
      "send mail",
      "send mail",
    ]);
    expect(spans.map((s) => s.attributes["workhorse.enqueue.outcome"])).toEqual([
      "accepted",
      "replayed",
      "replayed",
      "conflict",
      "accepted",
      ["accepted"],
      "non_replaceable",
    ]);
    const conflict = spans[3] as ReadableSpan;
    expect(conflict.status.code).toBe(2); // ERROR
    expect(conflict.events.map((e) => e.name)).toEqual(["workhorse.idempotency_conflict"]);
    expect(conflict.events[0]?.attributes).toEqual({ "workhorse.conflicting_fields": ["payload"] });
    expect(spans[5]?.attributes["messaging.batch.message_count"]).toBe(2);
    expect(spans[0]?.kind).toBe(3); // PRODUCER
  });

  test("no key, key preview, digest, job id or payload value appears in any attribute", async () => {
    const values = everyAttributeValue(await tel.metrics(), tel.spans());
    expect(values.length).toBeGreaterThan(20);
    for (const secret of secrets) {
      for (const v of values) expect(v.includes(secret), `${v} holds ${secret}`).toBe(false);
    }
  });
});

describe("worker metrics and attempt spans", () => {
  test("attempts by result, consumed messages, process duration; the handler runs inside the attempt span", async () => {
    const tel = telemetry();
    const q = t.queue({ telemetry: tel.options });
    const ok = await q.enqueue("ok", {}, { queue: "w1" });
    const retry = await q.enqueue(
      "flaky",
      {},
      { queue: "w1", maxAttempts: 2, retryPolicy: { type: "fixed", delayMs: 0 } },
    );
    const dead = await q.enqueue("boom", {}, { queue: "w1", maxAttempts: 1 });
    let flaky = 0;
    const insideSpan: boolean[] = [];
    const contextManager = new StackContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const seen: WorkerEvent[] = [];
    await startWorker({
      queues: ["w1"],
      telemetry: tel.options,
      onEvent: (e) => seen.push(e),
      handlers: {
        ok: async () => {
          insideSpan.push(trace.getActiveSpan()?.isRecording() === true);
          return 1;
        },
        flaky: async () => {
          if (flaky++ === 0) throw new Error("first try fails");
          return 2;
        },
        boom: async () => {
          throw new TypeError("always");
        },
      },
    });
    await waitFor("every job finished", async () => {
      const n = await t.count("job", `id in ('${ok}', '${retry}', '${dead}') and state in ('succeeded', 'failed')`);
      return n === 3 && seen.filter((e) => e.kind === "succeeded" || e.kind === "failed").length === 3;
    });
    const all = await tel.metrics();
    const a = "workhorse.worker.attempts";
    expect(all.find((m) => m.descriptor.name === a)?.descriptor.unit).toBe("{attempt}");
    expect(total(all, a, { "messaging.destination.name": "w1", "workhorse.attempt.result": "succeeded" })).toBe(2);
    expect(total(all, a, { "workhorse.attempt.result": "retry_scheduled", "error.type": "error" })).toBe(1);
    expect(total(all, a, { "workhorse.attempt.result": "failed", "error.type": "error" })).toBe(1);
    expect(total(all, "messaging.client.consumed.messages", { "messaging.destination.name": "w1" })).toBe(4);
    const d = all.find((m) => m.descriptor.name === "messaging.process.duration");
    expect(d?.descriptor.unit).toBe("s");
    expect(d?.dataPoints.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(4);
    const spans = tel.spans().filter((s) => s.name === "process w1");
    expect(spans).toHaveLength(4);
    expect(spans.map((s) => s.attributes["workhorse.attempt.result"]).sort()).toEqual([
      "failed",
      "retry_scheduled",
      "succeeded",
      "succeeded",
    ]);
    context.disable();
    expect(insideSpan).toEqual([true]);
    const values = everyAttributeValue(all, tel.spans());
    for (const id of [ok, retry, dead]) expect(values.some((v) => v.includes(id))).toBe(false);
  });
});

describe("operator actions", () => {
  test("cancels, redrives and purges are counted in jobs by action", async () => {
    const tel = telemetry();
    const q = t.queue({ telemetry: tel.options });
    const ctx = { actor: "ops", reason: "test" };
    const a = await q.enqueue("x", {}, { queue: "ops", runAt: new Date(Date.now() + 3_600_000) });
    const b = await q.enqueue("x", {}, { queue: "ops", runAt: new Date(Date.now() + 3_600_000) });
    const c = await q.enqueue("x", {}, { queue: "ops", runAt: new Date(Date.now() + 3_600_000) });
    await q.cancel({ jobIds: [a, b] }, ctx);
    await q.purge({ jobId: c }, ctx);
    const dead = await q.enqueue("boom", {}, { queue: "ops-dead", maxAttempts: 1 });
    await startWorker({ queues: ["ops-dead"], handlers: { boom: async () => Promise.reject(new Error("no")) } });
    await waitFor("a dead letter", async () => (await t.count("job", `id = '${dead}' and state = 'failed'`)) === 1);
    await q.redrive({ jobIds: [dead], requestId: `r-${Date.now()}`, requestedBy: "ops", reason: "test" });
    const all = await tel.metrics();
    const o = "workhorse.operator.jobs";
    expect(total(all, o, { "workhorse.operator.action": "cancel" })).toBe(2);
    expect(total(all, o, { "workhorse.operator.action": "purge" })).toBe(1);
    expect(total(all, o, { "workhorse.operator.action": "redrive" })).toBe(1);
    expect(all.find((m) => m.descriptor.name === o)?.descriptor.unit).toBe("{job}");
  });

  test("deleting failed jobs is counted in jobs deleted (action delete_failed), read from the SDK's in-memory exporter", async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    try {
      const q = t.queue({ telemetry: { meterProvider } });
      const ctx = { actor: "ops", reason: "test" };
      const boom = { boom: async () => Promise.reject(new Error("no")) };
      const dead = [
        await q.enqueue("boom", {}, { queue: "ops-del", maxAttempts: 1 }),
        await q.enqueue("boom", {}, { queue: "ops-del", maxAttempts: 1 }),
      ];
      const pending = await q.enqueue("x", {}, { queue: "ops-del-pending", runAt: new Date(Date.now() + 3_600_000) });
      await startWorker({ queues: ["ops-del"], handlers: boom });
      await waitFor(
        "two dead letters",
        async () => (await t.count("job", `id in ('${dead[0]}', '${dead[1]}') and state = 'failed'`)) === 2,
      );
      const r = await q.deleteFailedJobs({ jobIds: [...dead, pending] }, ctx);
      expect(r.deleted).toBe(2);
      await q.deleteFailedJobs({ jobIds: [pending] }, ctx); // nothing deleted: nothing recorded
      await reader.forceFlush();
      const all =
        exporter
          .getMetrics()
          .at(-1)
          ?.scopeMetrics.flatMap((s) => s.metrics) ?? [];
      const o = "workhorse.operator.jobs";
      expect(total(all, o, { "workhorse.operator.action": "delete_failed" })).toBe(2);
      const points = all.find((m) => m.descriptor.name === o)?.dataPoints ?? [];
      expect(points.map((p) => p.attributes)).toEqual([{ "workhorse.operator.action": "delete_failed" }]);
      const values = everyAttributeValue(all, []);
      for (const id of [...dead, pending]) expect(values.some((v) => v.includes(id))).toBe(false);
    } finally {
      await meterProvider.shutdown();
    }
  });
});

test("telemetry options are checked", () => {
  expect(() => t.queue({ telemetry: { scopes: "x" as unknown as string[] } })).toThrow(/telemetry/);
  expect(() => t.queue({ telemetry: { meterProvider: {} as never } })).toThrow(/meterProvider/);
});

describe("trace context stored with the job", () => {
  const traceparent = (s: ReadableSpan) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`;
  const stored = async (id: string) =>
    (await t.sql<{ trace_context: string | null }>("select trace_context from workhorse.job where id = $1", [id]))[0]
      ?.trace_context;

  test("coalescing: a traced call goes alone and stores its own traceparent; untraced calls still share, each with its own metrics", async () => {
    const tel = telemetry();
    const q = t.queue({ telemetry: tel.options, coalesce: { maxStatements: 1 } });
    const ids = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        q.enqueue("traced", { n }, { queue: "tr-c", idempotency: { key: `trc-${n}-${Date.now()}` } }),
      ),
    );
    const sends = tel.spans().filter((s) => s.name.startsWith("send"));
    expect(sends).toHaveLength(4);
    const parents = new Set(sends.map(traceparent));
    for (const id of ids) expect(parents.has((await stored(id)) as string)).toBe(true);
    expect(q.coalesceStats()).toMatchObject({ calls: 4, statements: 4, sharedStatements: 0 });
    expect(total(await tel.metrics(), "messaging.client.sent.messages")).toBe(4);

    const untraced = telemetry();
    untraced.options.tracerProvider = trace.getTracerProvider() as never; // the API's no-op provider
    const plain = t.queue({ telemetry: untraced.options, coalesce: { maxStatements: 1 } });
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        plain.enqueue("plain", { n }, { queue: "tr-c", idempotency: { key: `trp-${n}-${Date.now()}` } }),
      ),
    );
    expect(plain.coalesceStats()).toMatchObject({ calls: 4, sharedStatements: 1, largestStatement: 3 });
    expect(total(await untraced.metrics(), "messaging.client.sent.messages")).toBe(4);
  });

  test("one request, a batch and a debounce store their call's traceparent; the attempt span links to it", async () => {
    const tel = telemetry();
    const q = t.queue({ telemetry: tel.options });
    const one = await q.enqueue("traced", { n: 1 }, { queue: "tr", idempotency: { key: `tr-${Date.now()}` } });
    const [b1, b2] = await q.enqueueMany([
      { type: "later", payload: 1, options: { queue: "tr-b", runAt: new Date(Date.now() + 3_600_000) } },
      { type: "later", payload: 2, options: { queue: "tr-b", runAt: new Date(Date.now() + 3_600_000) } },
    ]);
    const deb = await q.enqueue(
      "later",
      {},
      { queue: "tr-b", debounce: { key: `trd-${Date.now()}`, windowMs: 3_600_000 } },
    );
    const sends = tel.spans().filter((s) => s.name.startsWith("send"));
    expect(sends).toHaveLength(3);
    expect(await stored(one)).toBe(traceparent(sends[0] as ReadableSpan));
    expect(await stored(b1 as string)).toBe(traceparent(sends[1] as ReadableSpan));
    expect(await stored(b2 as string)).toBe(traceparent(sends[1] as ReadableSpan));
    expect(await stored(deb)).toBe(traceparent(sends[2] as ReadableSpan));

    const seen: WorkerEvent[] = [];
    await startWorker({
      queues: ["tr"],
      telemetry: tel.options,
      onEvent: (e) => seen.push(e),
      handlers: { traced: async () => 1 },
    });
    await waitFor("the traced job ran", async () => seen.some((e) => e.kind === "succeeded"));
    const claimed = seen.find((e) => e.kind === "claimed");
    expect(claimed?.job.traceContext).toBe(traceparent(sends[0] as ReadableSpan));
    const attempt = tel.spans().find((s) => s.name === "process tr");
    expect(attempt?.links.map((l) => l.context.spanId)).toEqual([sends[0]?.spanContext().spanId]);
    expect(attempt?.links[0]?.context.traceId).toBe(sends[0]?.spanContext().traceId);
  });

  test("without an SDK nothing is stored (the API's no-op span has no context)", async () => {
    const q = t.queue();
    const id = await q.enqueue("x", {}, { queue: "untraced" });
    expect(await stored(id)).toBeNull();
  });
});
