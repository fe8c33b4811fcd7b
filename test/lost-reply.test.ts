// A keyed call whose first try committed but whose reply was lost (test/lost-reply-proxy.ts cuts the
// connection right after the commit): the Queue's retry proposes the same job ids, and must
// recognise its own earlier commit, write nothing, and answer what the first try would have.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, Queue, WorkhorseDatabaseError } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";
import { type LostReplyProxy, startLostReplyProxy } from "./lost-reply-proxy";

const t = setupQueueTests();
let proxy: LostReplyProxy;
let pool: pg.Pool;
let queue: Queue;

beforeAll(async () => {
  await t.ready();
  const u = new URL(t.url);
  proxy = await startLostReplyProxy({ host: u.hostname, port: Number(u.port) });
  pool = new pg.Pool({ connectionString: proxy.urlFor(t.url), max: 2 });
  pool.on("error", () => {});
  queue = new Queue({ pool, maintenance: false, notify: false });
  // Loads the installation key and the layout before any reply is lost.
  await queue.enqueue("warm.up", {});
});

afterAll(async () => {
  await queue.close();
  await pool.end();
  await proxy.close();
});

let n = 0;
const fresh = (p = "k") => `${p}-${++n}-${Date.now()}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function jobCount(scope: string): Promise<number> {
  return t.count("job", `key_scope = '${scope}'`);
}

describe("the proxy", () => {
  test("loses the reply of an enqueue only, not of the observation log's flush that may come first", async () => {
    const scope = fresh("s");
    await queue.enqueue("lost.reply", { p: 1 }, { idempotency: { key: "obs", scope } });
    await queue.enqueue("lost.reply", { p: 1 }, { idempotency: { key: "obs", scope } }); // a replay: one observation buffered
    proxy.loseNextReplies(1, () => sleep(10));
    const lost = proxy.lost;
    await queue.flushObservations();
    expect(proxy.lost).toBe(lost);
    const r = await queue.enqueueWithResult("lost.reply", { p: 2 }, { idempotency: { key: "obs2", scope } });
    expect(proxy.lost).toBe(lost + 1);
    expect(r.outcome).toBe("accepted");
  });
});

describe("a keyed retry after a commit whose reply was lost", () => {
  test("idempotency with ttlMs 20: the retry answers accepted with the stored job, no second insert", async () => {
    const scope = fresh("s");
    const before = queue.retryStats();
    proxy.loseNextReplies(1, () => sleep(60)); // the 20 ms binding has expired when the retry runs
    const lost = proxy.lost;
    const r = await queue.enqueueWithResult("lost.reply", { a: 1 }, { idempotency: { key: "k", scope, ttlMs: 20 } });
    expect(proxy.lost).toBe(lost + 1);
    expect(r.outcome).toBe("accepted");
    expect((await queue.getJob(r.jobId))?.payload).toEqual({ a: 1 });
    expect(await jobCount(scope)).toBe(1);
    expect(queue.retryStats().recoveredAccepts).toBe(before.recoveredAccepts + 1);
  });

  test("throttle with windowMs 20: accepted with the stored job", async () => {
    const scope = fresh("s");
    proxy.loseNextReplies(1, () => sleep(60));
    const r = await queue.enqueueWithResult("lost.reply", { b: 1 }, { throttle: { key: "k", scope, windowMs: 20 } });
    expect(r.outcome).toBe("accepted");
    expect(await queue.getJob(r.jobId)).not.toBeNull();
    expect(await jobCount(scope)).toBe(1);
  });

  test("a keyed batch with a short ttl: each request gets what the first try decided, nothing is written twice", async () => {
    const scope = fresh("s");
    // Bound before the batch, for a long time: the batch replays / coalesces them.
    const plain = t.queue();
    const old = await plain.enqueue("lost.reply", { old: 1 }, { idempotency: { key: "old", scope } });
    const thr = await plain.enqueue("lost.reply", { thr: 1 }, { throttle: { key: "thr", scope, windowMs: 60_000 } });
    const before = queue.retryStats();
    proxy.loseNextReplies(1, () => sleep(60));
    const results = await queue.enqueueManyWithResults([
      { type: "lost.reply", payload: { n: 1 }, options: { idempotency: { key: "a", scope, ttlMs: 20 } } },
      { type: "lost.reply", payload: { n: 2 }, options: { idempotency: { key: "b", scope, ttlMs: 20 } } },
      { type: "lost.reply", payload: { n: 1 }, options: { idempotency: { key: "a", scope, ttlMs: 20 } } },
      { type: "lost.reply", payload: { old: 1 }, options: { idempotency: { key: "old", scope } } },
      { type: "lost.reply", payload: { thr: 1 }, options: { throttle: { key: "thr", scope, windowMs: 60_000 } } },
    ]);
    const [a, b, a2, o, th] = results;
    expect(a?.outcome).toBe("accepted");
    expect(b?.outcome).toBe("accepted");
    expect(a2).toMatchObject({ jobId: a?.jobId, outcome: "replayed" });
    expect(o).toMatchObject({ jobId: old, outcome: "replayed" });
    expect(th).toMatchObject({ jobId: thr, outcome: "coalesced" });
    expect(await jobCount(scope)).toBe(4);
    expect(queue.retryStats().recoveredAccepts).toBe(before.recoveredAccepts + 2);
  });

  test("a batch of two debounce requests for one key: accepted then replaced, one debounced event", async () => {
    const scope = fresh("s");
    proxy.loseNextReplies(1, () => sleep(60));
    const [first, second] = await queue.enqueueManyWithResults([
      { type: "lost.reply", payload: { rev: 1 }, options: { debounce: { key: "d", scope, windowMs: 60_000 } } },
      { type: "lost.reply", payload: { rev: 2 }, options: { debounce: { key: "d", scope, windowMs: 60_000 } } },
    ]);
    expect(first?.outcome).toBe("accepted");
    expect(second).toMatchObject({ jobId: first?.jobId, outcome: "replaced" });
    expect((await queue.getJob(first?.jobId as string))?.payload).toEqual({ rev: 2 });
    expect(await t.count("job_event", `job_id = '${first?.jobId}' and kind = 'debounced'`)).toBe(1);
  });

  test("debounce: B replaces A's job between A's lost reply and A's retry; A's retry does not write A's payload back", async () => {
    const scope = fresh("s");
    const direct = t.queue();
    let b: Awaited<ReturnType<Queue["enqueueWithResult"]>> | undefined;
    proxy.loseNextReplies(1, async () => {
      b = await direct.enqueueWithResult("lost.reply", { rev: 2 }, { debounce: { key: "d", scope, windowMs: 60_000 } });
    });
    const a = await queue.enqueueWithResult(
      "lost.reply",
      { rev: 1 },
      { debounce: { key: "d", scope, windowMs: 60_000 } },
    );
    expect(a.outcome).toBe("accepted");
    expect(b).toMatchObject({ jobId: a.jobId, outcome: "replaced" });
    expect((await queue.getJob(a.jobId))?.payload).toEqual({ rev: 2 });
    expect(await t.count("job_event", `job_id = '${a.jobId}' and kind = 'debounced'`)).toBe(1);
    expect(await jobCount(scope)).toBe(1);
  });
});

describe("a traced keyed call (its statement carries the trace context) whose reply was lost", () => {
  test("the retry recognises its own commit: accepted, one job holding the first try's traceparent, a recovered accept counted", async () => {
    const { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } = await import("@opentelemetry/sdk-trace");
    const { MeterProvider, MetricReader } = await import("@opentelemetry/sdk-metrics");
    class Reader extends MetricReader {
      protected async onForceFlush(): Promise<void> {}
      protected async onShutdown(): Promise<void> {}
    }
    const reader = new Reader();
    const spans = new InMemorySpanExporter();
    const traced = new Queue({
      pool,
      maintenance: false,
      notify: false,
      telemetry: {
        meterProvider: new MeterProvider({ readers: [reader] }),
        tracerProvider: new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }),
      },
    });
    try {
      await traced.enqueue("warm.up", {});
      const scope = fresh("s");
      proxy.loseNextReplies(1, () => sleep(60));
      const r = await traced.enqueueWithResult(
        "lost.reply",
        { c: 1 },
        { queue: "recovered", idempotency: { key: "k", scope, ttlMs: 20 } },
      );
      expect(r.outcome).toBe("accepted");
      expect(await jobCount(scope)).toBe(1);
      const span = spans.getFinishedSpans().at(-1);
      const [row] = await t.sql<{ trace_context: string }>("select trace_context from workhorse.job where id = $1", [
        r.jobId,
      ]);
      expect(row?.trace_context).toBe(`00-${span?.spanContext().traceId}-${span?.spanContext().spanId}-01`);
      const { resourceMetrics } = await reader.collect();
      const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
      const sum = (name: string) =>
        all.find((m) => m.descriptor.name === name)?.dataPoints.reduce((n, p) => n + (p.value as number), 0) ?? 0;
      expect(sum("workhorse.enqueue.recovered_accepts")).toBe(1);
      expect(sum("workhorse.enqueue.retries")).toBe(1);
      // The recovered accept's attribute set (made first for this queue) is the sent message's too.
      const sent = all.find((m) => m.descriptor.name === "messaging.client.sent.messages")?.dataPoints ?? [];
      expect(
        sent.filter((p) => p.attributes["messaging.destination.name"] === "recovered").map((p) => p.attributes),
      ).toEqual([
        {
          "messaging.system": "workhorse",
          "messaging.destination.name": "recovered",
          "messaging.operation.name": "send",
        },
      ]);
    } finally {
      await traced.close();
    }
  });
});

describe("what a keyed call's retries count as exhausted", () => {
  // A Queue over the proxy with its own meter: retryStats() and the OpenTelemetry counters agree.
  async function meteredQueue(retry?: { attempts: number; maxDelayMs: number }) {
    const { MeterProvider, MetricReader } = await import("@opentelemetry/sdk-metrics");
    class Reader extends MetricReader {
      protected async onForceFlush(): Promise<void> {}
      protected async onShutdown(): Promise<void> {}
    }
    const reader = new Reader();
    const metered = new Queue({
      pool,
      maintenance: false,
      notify: false,
      ...(retry ? { retry } : {}),
      telemetry: { meterProvider: new MeterProvider({ readers: [reader] }) },
    });
    await metered.enqueue("warm.up", {});
    const counter = async (name: string) => {
      const { resourceMetrics } = await reader.collect();
      const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
      return all.find((m) => m.descriptor.name === name)?.dataPoints.reduce((n, p) => n + (p.value as number), 0) ?? 0;
    };
    return { metered, counter };
  }

  test("a conflict decided on the second try (the first lost its connection) is the call's answer, not an exhaustion", async () => {
    const { metered, counter } = await meteredQueue();
    try {
      const scope = fresh("s");
      const bound = await t.queue().enqueue("lost.reply", { a: 1 }, { idempotency: { key: "k", scope } });
      proxy.loseNextReplies(1); // the first try's answer (the conflict) is lost with its connection
      const lost = proxy.lost;
      const err = await metered
        .enqueue("lost.reply", { b: 2 }, { idempotency: { key: "k", scope } })
        .catch((e: unknown) => e);
      expect(proxy.lost).toBe(lost + 1);
      expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
      expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(bound);
      expect(metered.retryStats()).toEqual({ retriedCalls: 1, retries: 1, exhausted: 0, recoveredAccepts: 0 });
      expect(await counter("workhorse.enqueue.retries")).toBe(1);
      expect(await counter("workhorse.enqueue.retries_exhausted")).toBe(0);
      expect(await jobCount(scope)).toBe(1);
    } finally {
      await metered.close();
    }
  });

  test("every try losing its connection is one exhausted call, with the retryable error", async () => {
    const { metered, counter } = await meteredQueue({ attempts: 3, maxDelayMs: 0 });
    try {
      const scope = fresh("s");
      proxy.loseNextReplies(3);
      const lost = proxy.lost;
      const err = await metered
        .enqueue("lost.reply", { c: 3 }, { idempotency: { key: "k", scope } })
        .catch((e: unknown) => e);
      expect(proxy.lost).toBe(lost + 3);
      expect(err).toBeInstanceOf(WorkhorseDatabaseError);
      expect((err as WorkhorseDatabaseError).retryable).toBe(true);
      expect(metered.retryStats()).toEqual({ retriedCalls: 1, retries: 2, exhausted: 1, recoveredAccepts: 0 });
      expect(await counter("workhorse.enqueue.retries")).toBe(2);
      expect(await counter("workhorse.enqueue.retries_exhausted")).toBe(1);
      expect(await jobCount(scope)).toBe(1); // the first try committed; the later ones recognised it
    } finally {
      await metered.close();
    }
  });
});
