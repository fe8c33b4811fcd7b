// The payload contract: JSON that survives a round trip unchanged, counted as PostgreSQL stores it,
// nested at most LIMITS.maxPayloadDepth levels (checked in the process and again by PostgreSQL),
// and conflicts on payloads at that depth name their paths exactly.
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { EnqueueIdempotencyConflictError, EnqueueValidationError, migrate } from "../lib/enqueue";
import { legacyMigrations } from "../lib/enqueue/legacy-migrations.generated";
import { LIMITS } from "../lib/enqueue/limits";
import { migrateBefore } from "../lib/enqueue/migrate-before";
import { encodePayload } from "../lib/enqueue/payload";
import { dropDatabase, setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let n = 0;
const fresh = () => `payload-${++n}-${Date.now()}`;
const DEPTH = LIMITS.maxPayloadDepth;

/** `depth` nested objects ({"a": {"a": … leaf}}) or arrays ([[… leaf]]). */
function nest(depth: number, leaf: unknown, kind: "object" | "array" = "object"): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = kind === "object" ? { a: v } : [v];
  return v;
}

async function refusal(p: Promise<unknown>): Promise<EnqueueValidationError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EnqueueValidationError);
  return err as EnqueueValidationError;
}

describe("values JSON would silently change are refused with their path, nothing written", () => {
  class Money {
    cents = 5;
  }
  class Decimal {
    toJSON() {
      return "1.50";
    }
  }
  const secret = "s3cr3t-value";
  const cases: Array<[string, () => unknown, string, RegExp]> = [
    ["an invalid Date (JSON stores null)", () => ({ d: new Date(Number.NaN) }), "$.d", /invalid Date/],
    ["a Date (JSON stores a string)", () => ({ at: new Date(0) }), "$.at", /a Date would be stored as a string/],
    ["a symbol-keyed property (JSON drops it)", () => ({ a: 1, [Symbol("s")]: 2 }), "$", /symbol-keyed property/],
    ["a class instance", () => ({ o: new Money() }), "$.o", /an instance of Money/],
    ["a class instance with toJSON", () => [new Decimal()], "$[0]", /toJSON/],
    ["an own toJSON method", () => ({ x: { toJSON: () => secret } }), "$.x", /toJSON/],
    ["a boxed number", () => ({ n: new Number(1) }), "$.n", /boxed Number/],
    ["a boxed string", () => ({ s: new String(secret) }), "$.s", /boxed String/],
    ["a property holding undefined (JSON drops it)", () => ({ a: 1, b: undefined }), "$.b", /undefined/],
    [
      "a Date deep inside, under a key that is not an identifier",
      () => ({ items: [{}, { "due at": new Date(1) }] }),
      '$.items[1]["due at"]',
      /a Date/,
    ],
    ["NaN", () => ({ list: [1, Number.NaN] }), "$.list[1]", /finite numbers/],
  ];
  test.each(cases)("%s", async (_what, make, path, rule) => {
    const q = t.queue();
    const before = await t.count("job");
    const err = await refusal(q.enqueue("t", make()));
    expect(err.option).toBe("payload");
    expect(err.rule).toMatch(rule);
    expect(err.issues[0]?.path).toBe(path);
    expect(err.rule).toContain(`(at ${path})`);
    expect(err.message).not.toContain(secret);
    const batch = await refusal(
      q.enqueueMany([
        { type: "t", payload: {} },
        { type: "t", payload: make() },
      ]),
    );
    expect(batch.option).toBe("requests[1].payload");
    expect(batch.issues[0]?.path).toBe(path);
    expect(await t.count("job")).toBe(before);
  });

  test("a getter that throws is a validation error naming the payload", async () => {
    const q = t.queue();
    const payload = {
      get broken(): never {
        throw new Error("nope");
      },
    };
    const err = await refusal(q.enqueue("t", payload));
    expect(err.option).toBe("payload");
    expect(err.rule).toMatch(/could not be read: nope/);
  });

  test("plain objects (null prototype too), arrays and JSON primitives are stored as given", async () => {
    const q = t.queue();
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { k: "v" });
    const payload = { bare, list: [1, "two", true, null, { x: 1.5 }], n: -0, e: 1e21, small: -1e-7 };
    const id = await q.enqueue("t", payload);
    const job = await q.getJob(id);
    expect(job?.payload).toEqual({
      bare: { k: "v" },
      list: [1, "two", true, null, { x: 1.5 }],
      n: 0,
      e: 1e21,
      small: -1e-7,
    });
  });
});

describe("the size limit counts what PostgreSQL stores", () => {
  test("100,000 × -1e-7 is 1,200,000 bytes as jsonb text and is refused under the 1 MiB default", async () => {
    const q = t.queue();
    const payload = Array.from({ length: 100_000 }, () => -1e-7);
    const [row] = await t.sql<{ n: number }>("select octet_length($1::jsonb::text) as n", [JSON.stringify(payload)]);
    expect(row?.n).toBe(1_200_000);
    const err = await refusal(q.enqueue("t", payload));
    expect(err.option).toBe("payload");
    expect(err.rule).toMatch(/at most 1048576 bytes/);
  });

  test("a payload exactly at maxPayloadBytes is accepted and one byte over is refused", async () => {
    const payload = { neg: [-1e-7, -1e21, -1.5e-10], pos: [1e21, 5e-324], s: 'é"\n\u0001' };
    const [row] = await t.sql<{ n: number }>("select octet_length($1::jsonb::text) as n", [JSON.stringify(payload)]);
    const size = row!.n;
    await expect(t.queue({ maxPayloadBytes: size }).enqueue("t", payload)).resolves.toMatch(/^[0-9a-f-]{36}$/);
    const err = await refusal(t.queue({ maxPayloadBytes: size - 1 }).enqueue("t", payload));
    expect(err.rule).toContain(`got ${size}`);
  });

  const special = fc.constantFrom(
    -1e-7,
    1e-7,
    1e21,
    -1e21,
    1.5e-10,
    -1.5e-10,
    -0,
    0,
    5e-324,
    -5e-324,
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
    Number.MIN_SAFE_INTEGER,
    0.1,
    123456789012345680000,
    1.2345e-300,
  );
  const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      special,
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: "binary" }).filter((s) => s.isWellFormed() && !s.includes("\u0000")),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 5 }),
      fc.dictionary(
        fc.string().filter((s) => !s.includes("\u0000")),
        tie("value"),
        { maxKeys: 5 },
      ),
    ),
  })).value;

  test("property: the computed size is octet_length(payload::jsonb::text), exactly", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (v) => {
        const { text, bytes } = encodePayload(v, 64 * 1024 * 1024);
        const [row] = await t.sql<{ n: number }>("select octet_length($1::jsonb::text) as n", [text]);
        expect(bytes).toBe(row!.n);
      }),
      { numRuns: 300 },
    );
  });
});

describe(`payloads nest at most ${DEPTH} levels`, () => {
  test(`${DEPTH} levels of objects or arrays are accepted; one more is refused with its path`, async () => {
    const q = t.queue();
    for (const kind of ["object", "array"] as const) {
      const id = await q.enqueue("t", nest(DEPTH, 1, kind));
      expect((await q.getJob(id))?.payload).toEqual(nest(DEPTH, 1, kind));
      // An empty container at the bottom is a level too.
      await expect(q.enqueue("t", nest(DEPTH - 1, kind === "object" ? {} : [], kind))).resolves.toBeTruthy();
      const err = await refusal(q.enqueue("t", nest(DEPTH, kind === "object" ? {} : [], kind)));
      expect(err.option).toBe("payload");
      expect(err.rule).toMatch(new RegExp(`at most ${DEPTH} levels`));
      expect(err.issues[0]?.path).toBe(kind === "object" ? `$${".a".repeat(DEPTH)}` : `$${"[0]".repeat(DEPTH)}`);
    }
  });

  test("10,000 levels is a validation error, not a stack overflow; a cycle is named as one", async () => {
    const q = t.queue();
    for (const kind of ["object", "array"] as const) {
      const err = await refusal(q.enqueue("t", nest(10_000, 1, kind)));
      expect(err.rule).toMatch(new RegExp(`at most ${DEPTH} levels`));
    }
    const loop: Record<string, unknown> = { list: [] };
    (loop.list as unknown[]).push({ back: loop });
    const err = await refusal(q.enqueue("t", loop));
    expect(err.rule).toMatch(/cycle/);
    expect(err.issues[0]?.path).toBe("$.list[0].back");
  });

  test("PostgreSQL refuses a deeper payload from a writer that bypasses the client, on insert and update", async () => {
    const deep = JSON.stringify(nest(DEPTH, 1));
    const deeper = JSON.stringify(nest(DEPTH + 1, 1));
    const insert = (payload: string, id: string) =>
      t.sql(
        `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts)
         values ($1, 'bypass', 't', $2::jsonb, 'ready', now(), 1)`,
        [id, payload],
      );
    const id = "00000000-0000-7000-8000-000000000001";
    await insert(deep, id);
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: { code?: string; constraint?: string }) => e,
      );
    expect(await refused(insert(deeper, "00000000-0000-7000-8000-000000000002"))).toMatchObject({
      code: "23514",
      constraint: "job_payload_depth",
    });
    expect(
      await refused(t.sql("update workhorse.job set payload = $2::jsonb where id = $1", [id, deeper])),
    ).toMatchObject({ code: "23514", constraint: "job_payload_depth" });
    // The enqueue function itself, called without the client, is refused the same way.
    const call = (payload: string, newId: string) =>
      t.sql(
        `select * from workhorse.enqueue_one(p_id => $1, p_queue => 'bypass', p_type => 't', p_payload => $2::jsonb,
           p_run_at => null, p_max_attempts => 1, p_retry_policy => null, p_deadline => null,
           p_execution_timeout_ms => null, p_concurrency_key => null, p_tags => '{}', p_mode => null,
           p_scope => null, p_key_hash => null, p_key_preview => null, p_key_length => null, p_ttl_ms => null,
           p_field_digests => null, p_notify => false)`,
        [newId, payload],
      );
    await call(deep, "00000000-0000-7000-8000-000000000003");
    expect(await refused(call(deeper, "00000000-0000-7000-8000-000000000004"))).toMatchObject({
      code: "23514",
      constraint: "job_payload_depth",
    });
    expect(await t.count("job", "queue = 'bypass'")).toBe(2);
  });
});

describe("conflicts on deep payloads", () => {
  test(`a conflict at the depth bound (${DEPTH} levels) names the one differing path`, async () => {
    const q = t.queue();
    for (const kind of ["object", "array"] as const) {
      const key = fresh();
      await q.enqueue("t", nest(DEPTH, 1, kind), { idempotency: { key } });
      const err = (await q
        .enqueue("t", nest(DEPTH, 2, kind), { idempotency: { key } })
        .catch((e) => e)) as EnqueueIdempotencyConflictError;
      expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
      expect(err.payloadPaths).toEqual([kind === "object" ? `$${".a".repeat(DEPTH)}` : `$${"[0]".repeat(DEPTH)}`]);
      expect(err.payloadPathsTruncated).toBeUndefined();
    }
  });

  test("jsonb_diff_paths walks stored payloads deeper than the bound (2,000 levels) to the exact path", async () => {
    const deep = (leaf: number, kind: "object" | "array") => JSON.stringify(nest(2000, leaf, kind));
    const [row] = await t.sql<{ objects: string[]; arrays: string[]; mixed: string[] }>(
      `select workhorse.jsonb_diff_paths($1::jsonb, $2::jsonb) as objects,
              workhorse.jsonb_diff_paths($3::jsonb, $4::jsonb) as arrays,
              workhorse.jsonb_diff_paths($1::jsonb, $3::jsonb) as mixed`,
      [deep(1, "object"), deep(2, "object"), deep(1, "array"), deep(2, "array")],
    );
    expect(row?.objects).toEqual([`$${".a".repeat(2000)}`]);
    expect(row?.arrays).toEqual([`$${"[0]".repeat(2000)}`]);
    expect(row?.mixed).toEqual(["$"]);
  });

  test("property: jsonb_diff_paths answers what the first (quadratic) version answered", async () => {
    // The version of migration 001 (as released, when migrations still held the functions), the reference.
    const v1 = legacyMigrations.find((m) => m.version === 1)?.sql ?? "";
    const start = v1.indexOf("create function workhorse.jsonb_diff_paths");
    const body = v1.slice(start, v1.indexOf("$$;", start) + 3).replace("workhorse.jsonb_diff_paths", "pg_temp.diff_v1");
    const c = await t.pool.connect();
    try {
      await c.query(body);
      const key = fc.constantFrom("a", "b", "c", "0", "d e", "é", "_x1");
      const doc: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
        value: fc.oneof(
          { depthSize: "small", withCrossShrink: true },
          fc.constantFrom(0, 1, 1.0, "1", "x", true, false, null),
          fc.array(tie("value"), { maxLength: 4 }),
          fc.dictionary(key, tie("value"), { maxKeys: 4 }),
        ),
      })).value;
      await fc.assert(
        fc.asyncProperty(doc, doc, fc.integer({ min: 1, max: 5 }), async (a, b, limit) => {
          const { rows } = await c.query<{ old: string[]; now: string[] }>(
            `select pg_temp.diff_v1($1::jsonb, $2::jsonb, 100) as old,
                    workhorse.jsonb_diff_paths($1::jsonb, $2::jsonb, 100) as now,
                    cardinality(workhorse.jsonb_diff_paths($1::jsonb, $2::jsonb, $3)) as capped`,
            [JSON.stringify(a), JSON.stringify(b), limit],
          );
          const r = rows[0] as unknown as { old: string[]; now: string[]; capped: number };
          expect(r.now).toEqual(r.old);
          expect(r.capped).toBe(Math.min(r.old.length, limit + 1));
        }),
        { numRuns: 400 },
      );
    } finally {
      c.release();
    }
  });
});

describe("upgrading an installation that holds deeper payloads", () => {
  const adminUrl = inject("adminUrl");
  const name = `workhorse_test_depth_${process.pid}_${randomBytes(4).toString("hex")}`;
  let pool: pg.Pool;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  });

  afterAll(async () => {
    await pool?.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await dropDatabase(admin, name);
    await admin.end();
  });

  test("the migration keeps existing deeper rows (unchecked) and refuses new ones", async () => {
    await migrateBefore(pool, 14);
    const legacy = JSON.stringify(nest(300, 1));
    await pool.query(
      `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts)
       values ('00000000-0000-7000-8000-0000000000aa', 'old', 't', $1::jsonb, 'ready', now(), 1)`,
      [legacy],
    );
    const { relfilenode: before } = (
      await pool.query<{ relfilenode: number }>(
        "select relfilenode from pg_class where oid = 'workhorse.job'::regclass",
      )
    ).rows[0]!;
    await migrate(pool);
    const { relfilenode: after } = (
      await pool.query<{ relfilenode: number }>(
        "select relfilenode from pg_class where oid = 'workhorse.job'::regclass",
      )
    ).rows[0]!;
    expect(after).toBe(before); // no table rewrite
    const { rows } = await pool.query<{ same: boolean }>(
      "select payload = $1::jsonb as same from workhorse.job where queue = 'old'",
      [legacy],
    );
    expect(rows).toEqual([{ same: true }]);
    const refused = await pool
      .query(
        `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts)
         values ('00000000-0000-7000-8000-0000000000ab', 'old', 't', $1::jsonb, 'ready', now(), 1)`,
        [legacy],
      )
      .then(
        () => null,
        (e: { constraint?: string }) => e.constraint,
      );
    expect(refused).toBe("job_payload_depth");
  });
});
