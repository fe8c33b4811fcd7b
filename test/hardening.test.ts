// Regressions from an adversarial pass over the core: each test is one defect that was found.
import { spawn } from "node:child_process";
import { once } from "node:events";
import pg from "pg";
import { beforeAll, describe, expect, test } from "vitest";
import {
  EnqueueIdempotencyConflictError,
  EnqueueValidationError,
  Queue,
  QueueClosedError,
  Worker,
  WorkerConfigError,
  WorkhorseDatabaseError,
} from "../lib/enqueue";
import { isTransientDbError, sqlStateOf } from "../lib/enqueue/errors";
import { LIMITS } from "../lib/enqueue/limits";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let n = 0;
const fresh = () => `hard-${++n}-${Date.now()}`;

async function validationOption(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EnqueueValidationError);
  return (err as EnqueueValidationError).option;
}

describe("conflicts on large and deep payloads", () => {
  test("a conflict on a 16,000-element payload names the first 100 differing paths and says it truncated", async () => {
    const q = t.queue();
    const key = fresh();
    const a = Array.from({ length: 16_000 }, (_, i) => i);
    await q.enqueue("t", a, { idempotency: { key } });
    const err = (await q
      .enqueue(
        "t",
        a.map((x) => x + 1),
        { idempotency: { key } },
      )
      .catch((e) => e)) as EnqueueIdempotencyConflictError;
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err.payloadPaths).toHaveLength(100);
    expect(err.payloadPathsTruncated).toBe(true);
    expect(err.payloadPaths![0]).toBe("$[0]");
  });

  test("a conflict as deep as payloads may nest names the one differing path", async () => {
    const q = t.queue();
    const key = fresh();
    const deep = (depth: number, leaf: number) => {
      let o: unknown = leaf;
      for (let i = 0; i < depth; i++) o = { a: o };
      return o;
    };
    await q.enqueue("t", deep(LIMITS.maxPayloadDepth, 1), { idempotency: { key } });
    const err = (await q
      .enqueue("t", deep(LIMITS.maxPayloadDepth, 2), { idempotency: { key } })
      .catch((e) => e)) as EnqueueIdempotencyConflictError;
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err.payloadPaths).toEqual([`$${".a".repeat(LIMITS.maxPayloadDepth)}`]);
    expect(err.payloadPathsTruncated).toBeUndefined();
  });
});

describe("input that used to reach PostgreSQL", () => {
  test("dates outside the years 1..9999 are validation errors naming the option", async () => {
    const q = t.queue();
    expect(await validationOption(q.enqueue("t", {}, { runAt: new Date(Date.UTC(10000, 0, 1)) }))).toBe(
      "options.runAt",
    );
    expect(await validationOption(q.enqueue("t", {}, { runAt: new Date("0000-06-01T00:00:00Z") }))).toBe(
      "options.runAt",
    );
    expect(await validationOption(q.enqueue("t", {}, { deadline: new Date(8.64e15) }))).toBe("options.deadline");
    expect(await validationOption(q.enqueue("t", {}, { runAt: new Date(-8.64e15) }))).toBe("options.runAt");
    const ok = await q.enqueue("t", {}, { runAt: new Date("9999-12-31T00:00:00Z") });
    expect((await q.getJob(ok))!.runAt.toISOString()).toBe("9999-12-31T00:00:00.000Z");
  });

  test("a deadline in the past without runAt names deadline", async () => {
    const q = t.queue();
    expect(await validationOption(q.enqueue("t", {}, { deadline: new Date(Date.now() - 60_000) }))).toBe(
      "options.deadline",
    );
  });

  test("a key with NUL or control characters is fine; its preview shows U+FFFD instead", async () => {
    const q = t.queue();
    const key = `\u0000b${fresh()}`;
    const r = await q.enqueueWithResult("t", {}, { idempotency: { key } });
    expect(r.outcome).toBe("accepted");
    const b = await q.findBinding({ key });
    expect(b!.keyPreview.startsWith("\uFFFDb")).toBe(true);
    const many = await q.enqueueManyWithResults([
      { type: "t", payload: {}, options: { idempotency: { key: `\u001b[31m${fresh()}` } } },
      { type: "t", payload: {} },
    ]);
    expect(many.map((m) => m.outcome)).toEqual(["accepted", "accepted"]);
  });

  test("numbers that PostgreSQL writes out in full count toward the payload limit", async () => {
    const q = t.queue();
    expect(await validationOption(q.enqueue("t", Array(140_000).fill(1e308)))).toBe("payload");
    const small = await q.enqueue("t", [1e21, 1e-7, 123.5]);
    expect((await q.getJob(small))!.payload).toEqual([1e21, 1e-7, 123.5]);
  });

  test("a batch whose payloads together exceed 64 MiB is a validation error on requests", async () => {
    const q = t.queue();
    const big = "x".repeat(1024 * 1024 - 2);
    const requests = Array.from({ length: 70 }, () => ({ type: "t", payload: big }));
    expect(await validationOption(q.enqueueMany(requests))).toBe("requests");
  });
});

describe("hostile options objects", () => {
  test("getters and proxies that throw are validation errors, not raw errors", async () => {
    const q = t.queue();
    const boom = (): never => {
      throw new Error("getter boom");
    };
    expect(
      await validationOption(
        q.enqueue("t", {}, {
          get queue() {
            return boom();
          },
        } as never),
      ),
    ).toBe("options");
    expect(
      await validationOption(
        q.enqueue("t", {}, {
          idempotency: {
            get key() {
              return boom();
            },
          },
        } as never),
      ),
    ).toBe("options");
    const proxy = new Proxy({}, { ownKeys: () => boom() });
    expect(await validationOption(q.enqueue("t", {}, proxy as never))).toBe("options");
    const item = { type: "t", payload: {} };
    const bad = {
      type: "t",
      get payload() {
        return boom();
      },
    };
    expect(await validationOption(q.enqueueMany([item, bad as never]))).toBe("requests[1]");
  });

  test("class instances and inherited options are refused", async () => {
    const q = t.queue();
    expect(await validationOption(q.enqueue("t", {}, new Date() as never))).toBe("options");
    const inherited = Object.create({ idempotency: { key: "k" } });
    expect(await validationOption(q.enqueue("t", {}, inherited))).toBe("options");
  });

  test("a batch with holes names the missing request", async () => {
    const q = t.queue();
    // biome-ignore lint/suspicious/noSparseArray: the hole is the test
    const holey = [{ type: "t", payload: {} }, , { type: "t", payload: {} }];
    expect(await validationOption(q.enqueueMany(holey as never))).toBe("requests[1]");
  });

  test("a bad source label is refused up front and cannot cost other observations", async () => {
    const q = t.queue();
    expect(await validationOption(q.enqueue("t", {}, { source: "bad\u0000source" }))).toBe("options.source");
    expect(await validationOption(q.enqueue("t", {}, { source: "\ud800" }))).toBe("options.source");
    expect(() => new Queue({ pool: t.pool, source: "x\u0007" })).toThrow(EnqueueValidationError);
  });
});

describe("operations beyond enqueue", () => {
  test("maintenance inputs are validated (no endless loop, no negative retention)", async () => {
    const q = t.queue();
    expect(await validationOption(q.pruneObservations({ limit: 0 }))).toBe("options.limit");
    expect(await validationOption(q.pruneObservations({ olderThanMs: -1 }))).toBe("options.olderThanMs");
    expect(await q.pruneExpiredBindings(null as never)).toBeGreaterThanOrEqual(0);
    expect(() => new Queue({ pool: t.pool, maintenance: { intervalMs: 0 } })).toThrow(/maintenance.intervalMs/);
  });

  test("an ended pool gives WorkhorseDatabaseError on every operation, and sqlState is only ever a SQLSTATE", async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    const q = new Queue({ pool, maintenance: false });
    await pool.end();
    for (const op of [
      () => q.getJob("01900000-0000-7000-8000-000000000000"),
      () => q.findBinding({ key: "k" }),
      () => q.pruneExpiredBindings(),
      () => q.runMaintenance(),
      () => q.enqueue("t", {}),
    ]) {
      const err = await op().catch((e) => e);
      expect(err).toBeInstanceOf(WorkhorseDatabaseError);
      expect((err as WorkhorseDatabaseError).sqlState).toBeUndefined();
    }
    expect(sqlStateOf({ code: "ECONNREFUSED" })).toBeUndefined();
    const serverError = await t.pool.query("select 1 / 0").catch((e: unknown) => e);
    expect(sqlStateOf(serverError)).toBe("22012");
    await q.close();
  });

  test("a Node system error with a five-letter code (EPIPE, ESRCH) is connection loss, not a SQLSTATE", async () => {
    // A real EPIPE: write into a pipe whose reader has closed it (the child says so, then waits).
    const child = spawn("sh", ["-c", "exec 0<&-; echo closed; sleep 30"], { stdio: ["pipe", "pipe", "ignore"] });
    await once(child.stdout, "data");
    const epipe = await new Promise<NodeJS.ErrnoException>((resolve) => {
      child.stdin.on("error", resolve);
      child.stdin.write(Buffer.alloc(1 << 16));
    });
    child.kill();
    expect(epipe.code).toBe("EPIPE");
    // A real ESRCH: signal 0 to a process id that cannot exist.
    let esrch: unknown;
    try {
      process.kill(2 ** 22 + 1, 0);
    } catch (err) {
      esrch = err;
    }
    expect((esrch as NodeJS.ErrnoException).code).toBe("ESRCH");
    for (const err of [epipe, esrch]) {
      expect(sqlStateOf(err)).toBeUndefined();
      const wrapped = new WorkhorseDatabaseError("enqueue failed", err);
      expect(wrapped.sqlState).toBeUndefined();
    }
    // EPIPE is a broken connection: the keyed-call retry and the worker's completion write both
    // treat it as transient (a lone completion failing with it is not "refused by PostgreSQL").
    expect(new WorkhorseDatabaseError("enqueue failed", epipe).retryable).toBe(true);
    expect(isTransientDbError(epipe)).toBe(true);
  });

  test("an unknown Queue or Worker option is refused by name, as an unknown enqueue option is", () => {
    const refused = (make: () => unknown) => {
      try {
        make();
      } catch (err) {
        return err;
      }
      return null;
    };
    const q = refused(() => new Queue({ pool: t.pool, bogus: 1 } as never));
    expect(q).toBeInstanceOf(EnqueueValidationError);
    expect((q as EnqueueValidationError).option).toBe("bogus");
    const misspelt = refused(() => new Queue({ pool: t.pool, observations: { maxBufferd: 10 } } as never));
    expect((misspelt as EnqueueValidationError).option).toBe("observations.maxBufferd");
    const w = refused(() => new Worker({ pool: t.pool, handlers: { t: async () => {} }, concurrencey: 4 } as never));
    expect(w).toBeInstanceOf(WorkerConfigError);
    expect((w as WorkerConfigError).option).toBe("concurrencey");
    expect((w as WorkerConfigError).message).toMatch(/not a known option/);
  });

  test("close waits for calls in flight, writes their observations, then refuses new calls", async () => {
    const q = t.queue();
    const opts = { idempotency: { key: fresh() } };
    await q.enqueue("t", {}, opts);
    const replays = Array.from({ length: 20 }, () => q.enqueue("t", {}, opts));
    await q.close();
    await Promise.all(replays);
    expect(q.observationStats()).toMatchObject({ recorded: 20, written: 20, dropped: 0 });
    await expect(q.enqueue("t", {}, opts)).rejects.toBeInstanceOf(QueueClosedError);
    await q.close(); // twice is fine
  });
});
