// Property: changing any one fingerprint field of a keyed request yields a conflict naming exactly
// that field; re-ordering payload object keys or tags (or repeating tags) is a replay.
import fc from "fast-check";
import { beforeAll, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, type EnqueueOptions } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const FIELDS = [
  "concurrencyKey",
  "deadline",
  "executionTimeoutMs",
  "maxAttempts",
  "payload",
  "queue",
  "retryPolicy",
  "runAt",
  "tags",
  "ttlMs",
  "type",
] as const;
type Field = (typeof FIELDS)[number];

interface Req {
  type: string;
  payload: Record<string, unknown>;
  options: EnqueueOptions;
}

const name = fc.stringMatching(/^[a-z][a-z0-9._-]{0,20}$/);
const base = fc.record({
  type: name,
  queue: fc.option(name, { nil: undefined }),
  payload: fc.dictionary(name, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
  runAt: fc.option(fc.integer({ min: 0, max: 10_000_000 }), { nil: undefined }),
  deadlineAfter: fc.option(fc.integer({ min: 1, max: 10_000_000 }), { nil: undefined }),
  maxAttempts: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
  retry: fc.option(
    fc.oneof(
      fc.record({ type: fc.constant("fixed" as const), delayMs: fc.integer({ min: 0, max: 100_000 }) }),
      fc.record({
        type: fc.constant("exponential" as const),
        initialDelayMs: fc.integer({ min: 0, max: 1000 }),
        multiplier: fc.integer({ min: 2, max: 10 }),
        maxDelayMs: fc.integer({ min: 1000, max: 100_000 }),
      }),
    ),
    { nil: undefined },
  ),
  executionTimeoutMs: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined }),
  concurrencyKey: fc.option(name, { nil: undefined }),
  tags: fc.option(fc.uniqueArray(name, { maxLength: 5 }), { nil: undefined }),
  ttlMs: fc.option(fc.integer({ min: 60_000, max: 1_000_000_000 }), { nil: undefined }),
});
type Base = typeof base extends fc.Arbitrary<infer T> ? T : never;

const EPOCH = Date.UTC(2030, 0, 1);

function build(b: Base, key: string, scope: string): Req {
  const options: EnqueueOptions = { idempotency: { key, scope } };
  if (b.queue !== undefined) options.queue = b.queue;
  if (b.runAt !== undefined) options.runAt = new Date(EPOCH + b.runAt);
  if (b.deadlineAfter !== undefined) options.deadline = new Date(EPOCH + (b.runAt ?? 0) + 10_000_000 + b.deadlineAfter);
  if (b.maxAttempts !== undefined) options.maxAttempts = b.maxAttempts;
  if (b.retry !== undefined) options.retryPolicy = b.retry;
  if (b.executionTimeoutMs !== undefined) options.executionTimeoutMs = b.executionTimeoutMs;
  if (b.concurrencyKey !== undefined) options.concurrencyKey = b.concurrencyKey;
  if (b.tags !== undefined) options.tags = b.tags;
  if (b.ttlMs !== undefined) options.idempotency!.ttlMs = b.ttlMs;
  return { type: b.type, payload: b.payload, options };
}

function change(r: Req, field: Field): Req {
  const o: EnqueueOptions = { ...r.options, idempotency: { ...r.options.idempotency! } };
  const out: Req = { type: r.type, payload: r.payload, options: o };
  switch (field) {
    case "type":
      out.type = `${r.type}x`;
      break;
    case "payload":
      out.payload = { ...r.payload, "changed!": true };
      break;
    case "queue":
      o.queue = `${o.queue ?? "default"}x`;
      break;
    case "runAt":
      // Giving a runAt where none was given is a change too (an omitted runAt stays omitted).
      o.runAt = new Date((o.runAt?.getTime() ?? EPOCH) + 1);
      break;
    case "deadline":
      o.deadline = new Date((o.deadline?.getTime() ?? EPOCH + 20_000_000) + 1);
      break;
    case "maxAttempts":
      o.maxAttempts = ((o.maxAttempts ?? 25) % 1000) + 1;
      break;
    case "retryPolicy":
      o.retryPolicy =
        o.retryPolicy?.type === "fixed"
          ? { type: "fixed", delayMs: o.retryPolicy.delayMs + 1 }
          : o.retryPolicy
            ? { ...o.retryPolicy, maxDelayMs: o.retryPolicy.maxDelayMs + 1 }
            : { type: "fixed", delayMs: 1 };
      break;
    case "executionTimeoutMs":
      o.executionTimeoutMs = (o.executionTimeoutMs ?? 0) + 1;
      break;
    case "concurrencyKey":
      o.concurrencyKey = `${o.concurrencyKey ?? ""}x`;
      break;
    case "tags":
      o.tags = [...(o.tags ?? []), "zz-new-tag"];
      break;
    case "ttlMs":
      o.idempotency!.ttlMs = (o.idempotency!.ttlMs ?? 86_400_000) + 1;
      break;
  }
  return out;
}

function reorderKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reorderKeys);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .reverse()
        .map(([k, x]) => [k, reorderKeys(x)]),
    );
  }
  return v;
}

let n = 0;

test("changing exactly one fingerprint field is a conflict naming exactly that field", async () => {
  const q = t.queue();
  await fc.assert(
    fc.asyncProperty(base, fc.constantFrom(...FIELDS), async (b, field) => {
      const key = `prop-${++n}`;
      const r = build(b, key, "prop");
      const jobId = await q.enqueue(r.type, r.payload, r.options);
      const c = change(r, field);
      const err = await q.enqueue(c.type, c.payload, c.options).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
      expect((err as EnqueueIdempotencyConflictError).conflictingFields).toEqual([field]);
      expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(jobId);
      if (field === "payload") expect((err as EnqueueIdempotencyConflictError).payloadPaths).toEqual(['$["changed!"]']);
    }),
    { numRuns: 150 },
  );
});

test("re-ordering payload keys or tags, or repeating tags, is a replay", async () => {
  const q = t.queue();
  await fc.assert(
    fc.asyncProperty(base, async (b) => {
      const key = `prop-same-${++n}`;
      const r = build(b, key, "prop");
      const jobId = await q.enqueue(r.type, r.payload, r.options);
      const tags = r.options.tags ? [...r.options.tags].reverse().concat(r.options.tags) : undefined;
      const same = await q.enqueueWithResult(r.type, reorderKeys(r.payload), {
        ...r.options,
        ...(tags ? { tags } : {}),
      });
      expect(same).toMatchObject({ jobId, outcome: "replayed" });
    }),
    { numRuns: 100 },
  );
});
