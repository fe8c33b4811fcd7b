/**
 * One-off measurement of the console's bounded payload search (lib/console/reads/payload-search.ts) at
 * 1,000,000 jobs: a private embedded PostgreSQL (deleted after), jobs seeded set-based like
 * bench/read-surface.ts (UUIDv7 ids 500 ms apart, so a day holds 172,800 jobs; payload
 * {orderId, amount, currency, items: [{sku, qty}, {sku, qty}]}), then p50/p95 of `payloadSearchRows` over 200 runs per case.
 * `npx tsx bench/payload-search.ts [jobs]`. Not part of `npm run bench`.
 */

import { migrate } from "@workhorse/core";
import pg from "pg";
import { startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { payloadSearchRows } from "../lib/store/console/search";
import { percentile } from "./lib/measure";

/** The console's SEARCH_SCAN_CAP (lib/console/reads/payload-search.ts), or SCAN_CAP to try another. */
const SCAN_CAP = Number(process.env.SCAN_CAP ?? 10_000);
/** The console's payload test for `orderId = <id>` (matchOf in lib/console/reads/payload-search.ts). */
const matchForBench = (orderId: string) => ({ jsonpath: '$."orderId" ? (@ == $v0)', vars: { v0: orderId } });

const n = Number(process.argv[2] ?? 1_000_000);
const info = await startPrivateServer({ ephemeral: true });
const admin = new pg.Client({ connectionString: info.adminUrl });
await admin.connect();
await admin.query("create database payload_search");
await admin.end();
const pool = new pg.Pool({ connectionString: info.urlFor("payload_search"), max: 2 });
try {
  await migrate(pool);
  const t0 = performance.now();
  await pool.query("set maintenance_work_mem = '512MB'");
  await pool.query(
    `insert into workhorse.job (id, queue, type, payload, state, run_at, attempt, max_attempts, created_at, updated_at)
     select (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
            (array['default', 'billing', 'email', 'reports'])[1 + g % 4],
            (array['order.place', 'email.send', 'report.build', 'webhook.deliver'])[1 + g % 4],
            jsonb_build_object('orderId', 'ORD-' || g, 'amount', g % 10000, 'currency', 'EUR', 'items',
                               jsonb_build_array(jsonb_build_object('sku', 'SKU-' || g % 5000, 'qty', 1),
                                                 jsonb_build_object('sku', 'SKU-GIFT-WRAP', 'qty', 1))),
            case when g % 10 < 8 then 'succeeded' else 'ready' end, to_timestamp(ms / 1000.0), 0, 25,
            to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0)
       from generate_series(1, $1::int) g,
            lateral (select (extract(epoch from now()) * 1000)::bigint - ($1::bigint - g) * 500 as ms,
                            md5(g::text) as h) x`,
    [n],
  );
  await pool.query("vacuum (analyze) workhorse.job");
  console.log(`seeded ${n} jobs in ${Math.round(performance.now() - t0)} ms`);
  const fromDay = (() => {
    const hex = (Date.now() - 86_400_000).toString(16).padStart(12, "0");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
  })();
  const cases: [string, (i: number) => Parameters<typeof payloadSearchRows>[1]][] = [
    // A recent order (inside the newest SCAN_CAP jobs): found, the scan stops at the cap anyway.
    [
      "hit, last 24 h",
      (i) => ({
        match: matchForBench(`ORD-${n - (i % 10_000)}`),
        fromId: fromDay,
        limit: 50,
        scanCap: SCAN_CAP,
      }),
    ],
    [
      "hit with type, last 24 h",
      (i) => ({
        match: matchForBench(`ORD-${n - 4 * (i % 2_000)}`),
        type: "order.place",
        fromId: fromDay,
        limit: 50,
        scanCap: SCAN_CAP,
      }),
    ],
    // Into an array: items.sku = SKU-<k> matches an order line (one order in 5,000 has it).
    [
      "hit inside an array (items.sku), last 24 h",
      (i) => ({
        match: { jsonpath: '$."items"."sku" ? (@ == $v0)', vars: { v0: `SKU-${(n - (i % 10_000)) % 5000}` } },
        fromId: fromDay,
        limit: 50,
        scanCap: SCAN_CAP,
      }),
    ],
    [
      "miss (worst case: the whole cap read)",
      () => ({ match: matchForBench("ORD-NONE"), fromId: fromDay, limit: 50, scanCap: SCAN_CAP }),
    ],
  ];
  for (const [label, make] of cases) {
    for (let i = 0; i < 10; i++) await payloadSearchRows(pool, make(i)); // warm
    const ms: number[] = [];
    let found = 0;
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      const r = await payloadSearchRows(pool, make(i));
      ms.push(performance.now() - t);
      found += r.jobs.length;
    }
    ms.sort((a, b) => a - b);
    console.log(
      `${label}: p50 ${percentile(ms, 50).toFixed(1)} ms, p95 ${percentile(ms, 95).toFixed(1)} ms, max ${ms.at(-1)?.toFixed(1)} ms (scan cap ${SCAN_CAP}, matches ${found})`,
    );
  }
} finally {
  await pool.end();
  await stopEmbeddedPostgres();
}
