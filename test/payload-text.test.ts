// The payload's jsonb text, written by the process (lib/enqueue/payload-text.ts), is PostgreSQL's own
// text of the same jsonb, byte for byte, so the payload digest a client computes is the one the server
// computed before clients did (and keeps computing for clients that send 80 bytes of field digests).
import { createHash } from "node:crypto";
import fc from "fast-check";
import { beforeAll, expect, test } from "vitest";
import { jsonbText, plainNumber } from "../lib/enqueue/payload-text";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const storable = (s: string) => s.isWellFormed() && !s.includes("\u0000");
const text = fc.string({ unit: "binary", maxLength: 12 }).filter(storable);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.constantFrom(1e21, 1.5e-7, -1e-7, 1e-6, 123456789012345680000, 5e-324, 1.7976931348623157e308, -0),
    text,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(text, fc.constantFrom("a", "b", "aa", "é", "z", "ab", "\u{1F600}", "\uFFFD")),
      tie("value"),
      {
        maxKeys: 5,
      },
    ),
  ),
}));

test("jsonbText is PostgreSQL's jsonb::text of the same value, for JSON.stringify's text and for its own", async () => {
  const values = fc.sample(json.value, { numRuns: 400, seed: 20261202 });
  const { rows } = await t.pool.query<{ from_json: string; from_own: string }>(
    `select a::jsonb::text as from_json, b::jsonb::text as from_own
       from unnest($1::text[], $2::text[]) as u(a, b)`,
    [values.map((v) => JSON.stringify(v)), values.map((v) => jsonbText(v))],
  );
  for (let i = 0; i < values.length; i++) {
    const own = jsonbText(values[i]);
    expect({ value: values[i], text: own }).toEqual({ value: values[i], text: rows[i]?.from_json });
    expect(rows[i]?.from_own).toBe(own);
  }
});

test("numbers are written without exponents, as numeric writes them", () => {
  expect(plainNumber(1e21)).toBe("1000000000000000000000");
  expect(plainNumber(1.5e-7)).toBe("0.00000015");
  expect(plainNumber(-1.25e-7)).toBe("-0.000000125");
  expect(plainNumber(-2.5e22)).toBe("-25000000000000000000000");
  expect(plainNumber(0.000001)).toBe("0.000001");
  expect(plainNumber(-0)).toBe("0");
  expect(plainNumber(42)).toBe("42");
});

test("a keyed request's payload digest is the one PostgreSQL takes from the stored jsonb", async () => {
  const q = t.queue();
  const payload = { z: 1, é: [1e21, 1.5e-7, "\n\u0001\u2028"], a: { "\u{1F600}": null, b: true } };
  const { jobId } = await q.enqueueWithResult("t", payload, { idempotency: { key: "digest-1", scope: "pt" } });
  const [row] = await t.sql<{ client: Buffer; server: Buffer; stored: string }>(
    `select substring(b.field_digests from 33 for 8) as client,
            substring(sha256(convert_to(j.payload::text, 'UTF8')) from 1 for 8) as server, j.payload::text as stored
       from workhorse.job j join workhorse.key_binding b on b.job_id = j.id where j.id = $1`,
    [jobId],
  );
  expect(row?.stored).toBe(jsonbText(payload));
  expect(row?.client.toString("hex")).toBe(row?.server.toString("hex"));
  expect(row?.client.toString("hex")).toBe(
    createHash("sha256").update(jsonbText(payload)).digest().subarray(0, 8).toString("hex"),
  );
});

test("a request whose client sent 80 bytes of digests (the payload digested by PostgreSQL) and one that sent none decide alike", async () => {
  const q = t.queue();
  const payload = { order: "ORD-9", lines: [{ sku: "a", qty: 2 }], total: 1e-7 };
  const first = await q.enqueueWithResult("t", payload, { idempotency: { key: "mixed-1", scope: "pt" } });
  // The same request as a client that leaves the payload to PostgreSQL sends it: its field digests
  // without the payload's 8 bytes, the payload as JSON.stringify writes it.
  const [bound] = await t.sql<{ fd: Buffer; kh: Buffer }>(
    "select field_digests as fd, key_hash as kh from workhorse.key_binding where job_id = $1",
    [first.jobId],
  );
  const short = Buffer.concat([bound!.fd.subarray(0, 32), bound!.fd.subarray(40)]);
  const call = (key: Buffer, body: unknown) =>
    t.sql<{ job_id: string; outcome: string }>(
      `select job_id, outcome from workhorse.enqueue_one(
         gen_random_uuid(), 'default', 't', $1::jsonb, null, 25, null, null, null, null, '{}', 'idempotency', 'pt', $2,
         'mix…', 7, 86400000, $3, false)`,
      [JSON.stringify(body), key, short],
    );
  expect(await call(bound!.kh, payload)).toEqual([{ job_id: first.jobId, outcome: "replayed" }]);
  // And the other way round: a key bound through 80 bytes replays for this process, which sends none.
  const other = createHash("sha256").update("other-key").digest();
  const [made] = await call(other, payload);
  expect(made?.outcome).toBe("accepted");
  const [stored] = await t.sql<{ fd: Buffer }>(
    "select field_digests as fd from workhorse.key_binding where job_id = $1",
    [made?.job_id],
  );
  expect(stored?.fd.toString("hex")).toBe(bound?.fd.toString("hex"));
});

test("workhorse.request_field_digests and verified_field_digests are inlined where they are called (no function call per request)", async () => {
  const plan = await t.sql<{ "QUERY PLAN": string }>(
    `explain verbose
     select workhorse.verified_field_digests(x, x::text::bytea, c.d)
       from generate_series(1, 3) x
      cross join lateral (select workhorse.request_field_digests('q', 't', '{}'::jsonb, null, 25, null, null, null, null,
                                                                 '{}', 1000) as d offset 0) c`,
  );
  const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
  expect(text).toContain("sha256");
  expect(text).toContain("raise_field_digests_mismatch");
  expect(text).not.toContain("request_field_digests");
  expect(text).not.toContain("verified_field_digests");
});
