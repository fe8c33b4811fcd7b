/**
 * What one enqueue statement costs PostgreSQL, per statement and per request: `enqueue_one` alone,
 * `enqueue_batch` of 1..64 new keys, and N `enqueue_one` calls in one statement (`unnest(...)
 * cross join lateral workhorse.enqueue_one(...)`), each on one connection in a loop, with the
 * backend's CPU read from /proc (so it needs a server on this machine). A diagnostic beside
 * `npm run bench` for designing the write path (docs/benchmarks.md, "Where a call's time goes"):
 *
 *   npx tsx bench/statement-costs.ts postgres://user:pass@127.0.0.1:5432/postgres [--requests=3000]
 *
 * Every request has a new key; the database is fresh and migrated first.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { migrate } from "@workhorse/core";
import pg from "pg";
import { v7 } from "uuid";
import { type NormalizedRequest, normalizeRequest } from "../lib/enqueue/enqueue-input";
import { KeyRing } from "../lib/enqueue/keys";
import { batchValues, ENQUEUE_BATCH_SQL, oneRequestStatement, oneRequestValues } from "../lib/store/core/enqueue";

const adminUrl = process.argv[2];
if (!adminUrl?.startsWith("postgres")) throw new Error("usage: npx tsx bench/statement-costs.ts <admin url>");
const requests = Number(process.argv.find((a) => a.startsWith("--requests="))?.slice(11) ?? 3000);

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query("drop database if exists workhorse_statement_costs");
await admin.query("create database workhorse_statement_costs");
await admin.end();
const url = new URL(adminUrl);
url.pathname = "/workhorse_statement_costs";
const setup = new pg.Pool({ connectionString: url.toString(), max: 1 });
await migrate(setup);
await setup.end();

const c = new pg.Client({ connectionString: url.toString() });
await c.connect();
const pid = (await c.query<{ p: number }>("select pg_backend_pid() as p")).rows[0]?.p;
/** The backend's CPU so far, µs (utime + stime, USER_HZ 100). */
const backendCpuUs = () => {
  const f = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000;
};
const keys = new KeyRing(randomBytes(32));
await keys.load(async () => ({ key_secret: null, legacy_ms: 0 }));
let n = 0;
const request = () =>
  normalizeRequest(
    "order.place",
    { orderId: `ORD-${n}`, total: 1234.5 },
    { queue: "orders", idempotency: { key: `k-${n++}-${randomBytes(4).toString("hex")}`, scope: "orders" } },
    { maxPayloadBytes: 1 << 20, source: null, keys },
  );

const LATERAL = `select x.o::integer as ordinal, e.job_id, e.outcome, e.request_digest, e.reason
  from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::text[], $7::text[], $8::bytea[],
              $9::text[], $10::integer[], $11::bigint[], $12::bytea[]) with ordinality
       as x(id, queue, type, payload, max_attempts, mode, scope, kh, preview, klen, ttl, fd, o)
 cross join lateral workhorse.enqueue_one(x.id, x.queue, x.type, x.payload::jsonb, null, x.max_attempts, null, null,
        null, null, '{}', x.mode, x.scope, x.kh, x.preview, x.klen, x.ttl, x.fd, false) e`;
const column = <T>(rs: NormalizedRequest[], f: (k: NonNullable<NormalizedRequest["keyed"]>) => T) =>
  rs.map((r) => f(r.keyed as NonNullable<NormalizedRequest["keyed"]>));

const shapes: Record<string, (rs: NormalizedRequest[]) => Promise<unknown>> = {
  one: (rs) => {
    const r = rs[0] as NormalizedRequest;
    const st = oneRequestStatement(r);
    return c.query({ name: st.name, text: st.text, values: oneRequestValues(r, v7(), false, false) });
  },
  batch: (rs) =>
    c.query({
      name: "batch",
      text: ENQUEUE_BATCH_SQL,
      values: batchValues(
        rs,
        rs.map(() => v7()),
        false,
      ),
    }),
  lateral: (rs) =>
    c.query({
      name: "lateral",
      text: LATERAL,
      values: [
        rs.map(() => v7()),
        rs.map((r) => r.queue),
        rs.map((r) => r.type),
        rs.map((r) => r.payloadJson),
        rs.map((r) => r.maxAttempts),
        column(rs, (k) => k.mode),
        column(rs, (k) => k.key.scope),
        column(rs, (k) => k.key.keyHash),
        column(rs, (k) => k.key.keyPreview),
        column(rs, (k) => k.key.keyLength),
        column(rs, (k) => k.ttlMs),
        column(rs, () => null),
      ],
    }),
};

console.log("shape     size  wall µs/statement  backend CPU µs/statement  µs/request");
for (const size of [1, 2, 4, 8, 16, 64]) {
  for (const [shape, send] of Object.entries(shapes)) {
    if (shape === "one" && size > 1) continue;
    for (let w = 0; w < 10; w++) await send(Array.from({ length: size }, request));
    const statements = Math.max(30, Math.floor(requests / size));
    const all = Array.from({ length: statements }, () => Array.from({ length: size }, request));
    const t0 = performance.now();
    const cpu0 = backendCpuUs();
    for (const rs of all) await send(rs);
    const wall = ((performance.now() - t0) * 1000) / statements;
    const cpu = (backendCpuUs() - cpu0) / statements;
    console.log(
      `${shape.padEnd(8)} ${String(size).padStart(5)}  ${wall.toFixed(0).padStart(17)}  ${cpu.toFixed(0).padStart(24)}  ${(cpu / size).toFixed(0).padStart(10)}`,
    );
  }
}
await c.end();
