// PostgreSQL decides on the request it receives: the fingerprint's field digests are computed from
// the values in the statement (workhorse.request_field_digests), never taken from the client. A
// statement changed after the client built it (a wrapping driver) is decided on what it carries; a
// caller that sends digests of other values is refused (WH422) and nothing is written.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { v7 } from "uuid";
import { beforeAll, describe, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError, Queue } from "../lib/enqueue";
import { bucketedId, keyBucket } from "../lib/store/ids";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

/**
 * A pg.Client that rewrites every enqueue statement's string values before they are sent: what a
 * buggy middleware, an instrumenting wrapper or a tampering proxy would do after the client built
 * the statement. `from` -> `to` in every string parameter.
 */
function tamperingPool(from: string, to: string): pg.Pool {
  class TamperingClient extends pg.Client {
    // biome-ignore lint/suspicious/noExplicitAny: pg's query overloads, forwarded unchanged.
    override query(config: any, values?: any, callback?: any): any {
      const rewrite = (vs: unknown[] | undefined) =>
        vs?.map((v) => (typeof v === "string" && v.includes(from) ? v.split(from).join(to) : v));
      const text: string = typeof config === "string" ? config : (config?.text ?? "");
      if (/workhorse\.enqueue_(one|batch)/.test(text)) {
        if (typeof config?.submit === "function" && Array.isArray(config.values)) {
          // A submittable (the core's statements) is sent as it is: its values are rewritten in place.
          config.values.splice(0, config.values.length, ...(rewrite(config.values) ?? []));
        } else if (typeof config === "object" && config !== null && Array.isArray(config.values)) {
          config = { ...config, values: rewrite(config.values) };
        } else if (Array.isArray(values)) {
          values = rewrite(values);
        }
      }
      return super.query(config, values, callback);
    }
  }
  return new pg.Pool({ connectionString: t.url, max: 4, Client: TamperingClient });
}

async function withQueue<T>(pool: pg.Pool, fn: (q: Queue) => Promise<T>, coalesce = true): Promise<T> {
  const q = new Queue({ pool, maintenance: false, ...(coalesce ? {} : { coalesce: false }) });
  try {
    return await fn(q);
  } finally {
    await q.close();
    await pool.end();
  }
}

/** The stored job and its binding for a key's job id (requests here give no runAt). */
async function stored(jobId: string) {
  // Two single-table reads: on Citus the job and its binding live on different shards.
  const [binding] = await t.sql<{ fd: Buffer; rd: Buffer; ttl_ms: string }>(
    "select field_digests as fd, request_digest as rd, ttl_ms from workhorse.key_binding where job_id = $1",
    [jobId],
  );
  const [job] = await t.sql<{ payload: unknown; server: Buffer }>(
    `select j.payload, workhorse.request_field_digests(j.queue, j.type, j.payload, null, j.max_attempts, j.retry_policy,
              j.deadline, j.execution_timeout_ms, j.concurrency_key, j.tags, $2::bigint) as server
       from workhorse.job j where j.id = $1`,
    [jobId, binding?.ttl_ms],
  );
  return binding && job ? { ...binding, ...job } : undefined;
}

describe.each([
  ["coalesced statements", true],
  ["one statement per call", false],
])("a statement changed after the client built it (%s)", (_name, coalesce) => {
  const scope = `tamper-${coalesce}`;

  test("a live key: never a silent replay, the conflict names the path that differs", async () => {
    const q = t.queue();
    const key = { key: "invoice-1", scope };
    const first = await q.enqueueWithResult("invoice.capture", { amount: 100 }, { idempotency: key });
    expect(first.outcome).toBe("accepted");
    const err = await withQueue(
      tamperingPool('"amount": 100', '"amount": 999'),
      (tq) =>
        tq.enqueue("invoice.capture", { amount: 100 }, { idempotency: key }).then(
          () => null,
          (e) => e,
        ),
      coalesce,
    );
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect(err).toMatchObject({
      existingJobId: first.jobId,
      conflictingFields: ["payload"],
      payloadPaths: ["$.amount"],
    });
    expect(await t.count("job", `key_scope = '${scope}'`)).toBe(1);
  });

  test("a new key: what is stored is what PostgreSQL received, with its own digest", async () => {
    const key = { key: "invoice-2", scope };
    const made = await withQueue(
      tamperingPool('"amount": 100', '"amount": 999'),
      (tq) => tq.enqueueWithResult("invoice.capture", { amount: 100 }, { idempotency: key }),
      coalesce,
    );
    expect(made.outcome).toBe("accepted");
    const row = await stored(made.jobId);
    expect(row?.payload).toEqual({ amount: 999 });
    expect(row?.fd.toString("hex")).toBe(row?.server.toString("hex"));
    expect(row?.rd.toString("hex")).toBe(createHash("sha256").update(row!.server).digest("hex"));
    // The honest request is not the stored one: a conflict on the payload, not a replay.
    const err = await t
      .queue()
      .enqueue("invoice.capture", { amount: 100 }, { idempotency: key })
      .then(
        () => null,
        (e) => e,
      );
    expect(err).toMatchObject({ conflictingFields: ["payload"], payloadPaths: ["$.amount"] });
    // And what was stored replays.
    const again = await t.queue().enqueueWithResult("invoice.capture", { amount: 999 }, { idempotency: key });
    expect(again).toMatchObject({ jobId: made.jobId, outcome: "replayed" });
  });

  test("a batch: the changed request conflicts, naming its ordinal and path; nothing is written", async () => {
    const q = t.queue();
    const key = { key: "invoice-3", scope };
    const first = await q.enqueueWithResult("invoice.capture", { amount: 100 }, { idempotency: key });
    const before = await t.count("job");
    const err = await withQueue(
      tamperingPool('"amount": 100', '"amount": 999'),
      (tq) =>
        tq
          .enqueueMany([
            { type: "other", payload: { n: 1 }, options: { idempotency: { key: "invoice-3b", scope } } },
            { type: "invoice.capture", payload: { amount: 100 }, options: { idempotency: key } },
          ])
          .then(
            () => null,
            (e) => e,
          ),
      coalesce,
    );
    expect(err).toMatchObject({
      existingJobId: first.jobId,
      ordinal: 2,
      conflictingFields: ["payload"],
      payloadPaths: ["$.amount"],
    });
    expect(await t.count("job")).toBe(before);
  });

  test("throttle and debounce decide on the payload received", async () => {
    const q = t.queue();
    const throttle = { key: "report-1", scope, windowMs: 60_000 };
    await q.enqueue("report", { amount: 100 }, { throttle });
    const err = await withQueue(
      tamperingPool('"amount": 100', '"amount": 999'),
      (tq) =>
        tq.enqueue("report", { amount: 100 }, { throttle }).then(
          () => null,
          (e) => e,
        ),
      coalesce,
    );
    expect(err).toMatchObject({ conflictingFields: ["payload"], payloadPaths: ["$.amount"] });

    const debounce = { key: "sync-1", scope, windowMs: 60_000 };
    const d1 = await q.enqueueWithResult("sync", { amount: 100 }, { debounce });
    const d2 = await withQueue(
      tamperingPool('"amount": 100', '"amount": 999'),
      (tq) => tq.enqueueWithResult("sync", { amount: 100 }, { debounce }),
      coalesce,
    );
    // The received request differs from the pending job's, so it replaces it with what was received.
    expect(d2).toMatchObject({ jobId: d1.jobId, outcome: "replaced" });
    const row = await stored(d1.jobId);
    expect(row?.payload).toEqual({ amount: 999 });
    expect(row?.fd.toString("hex")).toBe(row?.server.toString("hex"));
  });
});

/** enqueue_one as a hand-written caller sends it (enqueue_one_at with the key's bucket on Citus). */
async function handCall(args: {
  scope: string;
  key: string;
  queue?: string;
  payload: unknown;
  digests: Buffer | null;
}): Promise<{ job_id: string; outcome: string }> {
  const kh = createHash("sha256").update(`${args.scope}\u001f${args.key}`).digest();
  const bucket = keyBucket(args.scope, kh);
  const id = distributedTests() ? bucketedId(v7(), bucket) : v7();
  const at = distributedTests()
    ? "enqueue_one_at(p_bucket => $7, p_ordinal => 1, p_schedule => null, "
    : "enqueue_one(";
  const [row] = await t.sql<{ job_id: string; outcome: string }>(
    `select job_id, outcome from workhorse.${at}
       p_id => $1, p_queue => $6, p_type => 't', p_payload => $2::jsonb, p_run_at => null, p_max_attempts => 25,
       p_retry_policy => null, p_deadline => null, p_execution_timeout_ms => null, p_concurrency_key => null,
       p_tags => '{}', p_mode => 'idempotency', p_scope => $3, p_key_hash => $4, p_key_preview => '…',
       p_key_length => 5, p_ttl_ms => 86400000, p_field_digests => $5, p_notify => false
       ${distributedTests() ? ", p_max_wait_ms => null, p_retry => false" : ""})`,
    [
      id,
      JSON.stringify(args.payload),
      args.scope,
      kh,
      args.digests,
      args.queue ?? "default",
      ...(distributedTests() ? [bucket] : []),
    ],
  );
  return row!;
}

async function digestsOf(payload: unknown, queue = "default"): Promise<Buffer> {
  const [row] = await t.sql<{ d: Buffer }>(
    `select workhorse.request_field_digests($2, 't', $1::jsonb, null, 25, null, null, null, null, '{}', 86400000) as d`,
    [JSON.stringify(payload), queue],
  );
  return row!.d;
}

describe("digests sent by a caller are checked, never trusted", () => {
  test("digests of another payload are refused with WH422 naming the field, and nothing is written", async () => {
    const honest = await digestsOf({ amount: 100 });
    const scope = "sent";
    expect(await handCall({ scope, key: "k1", payload: { amount: 100 }, digests: honest })).toMatchObject({
      outcome: "accepted",
    });
    const before = await t.count("job");
    // A live key: before, this was a silent replay of the job that holds amount 100.
    const refused = await handCall({ scope, key: "k1", payload: { amount: 999 }, digests: honest }).then(
      () => null,
      (e) => e,
    );
    expect(refused?.code).toBe("WH422");
    expect(JSON.parse(refused.detail)).toEqual({ ordinal: 1, fields: ["payload"], sentBytes: 88 });
    // A new key: before, the wrong digest was stored.
    const fresh = await handCall({ scope, key: "k2", payload: { amount: 999 }, digests: honest }).then(
      () => null,
      (e) => e,
    );
    expect(fresh?.code).toBe("WH422");
    expect(await t.count("job")).toBe(before);
    expect(await t.count("key_binding", "scope = 'sent'")).toBe(1);
  });

  test("80 bytes (no payload digest) are checked field by field too; right digests of either size decide as none", async () => {
    const honest = await digestsOf({ n: 1 }, "billing");
    const short = Buffer.concat([honest.subarray(0, 32), honest.subarray(40)]);
    const scope = "sent-80";
    const refused = await handCall({ scope, key: "k", queue: "other", payload: { n: 1 }, digests: short }).then(
      () => null,
      (e) => e,
    );
    expect(refused?.code).toBe("WH422");
    expect(JSON.parse(refused.detail)).toEqual({ ordinal: 1, fields: ["queue"], sentBytes: 80 });
    const made = await handCall({ scope, key: "k", queue: "billing", payload: { n: 1 }, digests: short });
    expect(made.outcome).toBe("accepted");
    expect(await handCall({ scope, key: "k", queue: "billing", payload: { n: 1 }, digests: honest })).toEqual({
      job_id: made.job_id,
      outcome: "replayed",
    });
    expect(await handCall({ scope, key: "k", queue: "billing", payload: { n: 1 }, digests: null })).toEqual({
      job_id: made.job_id,
      outcome: "replayed",
    });
  });
});

test("PostgreSQL's digests are the conformance file's for every keyed case", async () => {
  const file = JSON.parse(readFileSync(new URL("../sdk/conformance/enqueue.json", import.meta.url), "utf8")) as {
    cases: {
      name: string;
      expect: {
        ok?: {
          payloadJsonbText: string;
          type: string;
          queue: string;
          runAt: string | null;
          deadline: string | null;
          maxAttempts: number;
          retryPolicy: unknown;
          executionTimeoutMs: number | null;
          concurrencyKey: string | null;
          tags: string[];
          keyed: { ttlMs: number | null; fieldDigests: string } | null;
        };
      };
    }[];
  };
  const keyed = file.cases.filter((c) => c.expect.ok?.keyed);
  expect(keyed.length).toBeGreaterThan(40);
  const { rows } = await t.pool.query<{ d: Buffer }>(
    `select workhorse.request_field_digests(u.queue, u.type, u.payload::jsonb, u.run_at, u.max_attempts, u.retry_policy::jsonb,
              u.deadline, u.timeout_ms, u.concurrency_key, array(select jsonb_array_elements_text(u.tags::jsonb)), u.ttl) as d
       from unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::integer[], $6::text[], $7::timestamptz[],
                   $8::bigint[], $9::text[], $10::text[], $11::bigint[]) with ordinality
            as u(queue, type, payload, run_at, max_attempts, retry_policy, deadline, timeout_ms, concurrency_key, tags, ttl, o)
      order by u.o`,
    [
      keyed.map((c) => c.expect.ok!.queue),
      keyed.map((c) => c.expect.ok!.type),
      keyed.map((c) => c.expect.ok!.payloadJsonbText),
      keyed.map((c) => c.expect.ok!.runAt),
      keyed.map((c) => c.expect.ok!.maxAttempts),
      keyed.map((c) => (c.expect.ok!.retryPolicy === null ? null : JSON.stringify(c.expect.ok!.retryPolicy))),
      keyed.map((c) => c.expect.ok!.deadline),
      keyed.map((c) => c.expect.ok!.executionTimeoutMs),
      keyed.map((c) => c.expect.ok!.concurrencyKey),
      keyed.map((c) => JSON.stringify(c.expect.ok!.tags)),
      keyed.map((c) => c.expect.ok!.keyed!.ttlMs),
    ],
  );
  const mismatched = keyed
    .map((c, i) => ({ name: c.name, want: c.expect.ok!.keyed!.fieldDigests, got: rows[i]!.d.toString("hex") }))
    .filter((x) => x.want !== x.got);
  expect(mismatched).toEqual([]);
});

test("PostgreSQL's digests of timestamps, tags and numbers are JSON.stringify's", async () => {
  const [row] = await t.sql<{ d: Buffer }>(
    `select workhorse.request_field_digests('q', 't', '{}'::jsonb, '0001-02-03T04:05:06.789Z', 7,
              '{"maxDelayMs": 60000, "multiplier": 3, "initialDelayMs": 10}', '9999-12-31T23:59:59.999Z', 5000,
              'c"\\', array['b', 'a', 'é', 'b', 'Z'], 1) as d`,
  );
  const digest = (v: unknown) => createHash("sha256").update(JSON.stringify(v)).digest().subarray(0, 8);
  const want = Buffer.concat([
    digest('c"\\'),
    digest("9999-12-31T23:59:59.999Z"),
    digest(5000),
    digest(7),
    createHash("sha256").update("{}").digest().subarray(0, 8),
    digest("q"),
    digest({ initialDelayMs: 10, multiplier: 3, maxDelayMs: 60000 }),
    digest("0001-02-03T04:05:06.789Z"),
    digest(["Z", "a", "b", "é"]),
    digest(1),
    digest("t"),
  ]);
  expect(row?.d.toString("hex")).toBe(want.toString("hex"));
});
