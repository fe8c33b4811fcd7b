/**
 * What the upgrade path from plain SHA-256 key hashes costs on the enqueue path.
 *
 *   npx tsx bench/legacy-probe.ts [--calls 3000]
 *
 * A private embedded PostgreSQL; one database per case; one `Queue`; `calls` sequential single
 * keyed enqueues through the pool, half new keys (accepted) and half repeats (replayed), median and
 * p95 per call in microseconds:
 *
 * - `no window`: a new installation (no legacy bindings, so no probe: the statements of before);
 * - `window, miss`: upgraded while a legacy binding was live, so every keyed call also sends the
 *   legacy hash and PostgreSQL probes it (and finds nothing for these keys);
 * - `window, legacy hit`: repeats of keys whose live binding is a legacy one (replayed through the
 *   probe, which takes a FOR KEY SHARE lock).
 */
import { createHash, randomBytes } from "node:crypto";
import { migrate, Queue } from "@workhorse/core";
import pg from "pg";
import { ensureDatabase, startPrivateServer, stopEmbeddedPostgres } from "../lib/db";
import { migrateBefore } from "../lib/enqueue/migrate-before";

const i = process.argv.indexOf("--calls");
const CALLS = i > 0 ? Number(process.argv[i + 1]) : 3000;
const sha256 = (scope: string, key: string) => createHash("sha256").update(`${scope}\u001f${key}`, "utf8").digest();

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (s[Math.min(s.length - 1, Math.floor(q * s.length))] as number).toFixed(0);
  return `median ${at(0.5)} µs, p95 ${at(0.95)} µs`;
}

async function run(name: string, pool: pg.Pool, keys: (n: number) => string) {
  const q = new Queue({ pool, maintenance: false, notify: false, observations: { maxBuffered: 100_000 } });
  const opts = (k: string) => ({ idempotency: { key: k, scope: "bench", ttlMs: 3_600_000 } });
  for (let n = 0; n < 200; n++) await q.enqueue("bench", {}, opts(`warm-${n}`));
  const times: number[] = [];
  for (let n = 0; n < CALLS; n++) {
    const t = process.hrtime.bigint();
    await q.enqueue("bench", {}, opts(keys(n)));
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  await q.close();
  process.stdout.write(`${name.padEnd(20)} ${stats(times)}\n`);
}

async function main() {
  const info = await startPrivateServer({ ephemeral: true });
  try {
    const pools: pg.Pool[] = [];
    const db = async (name: string) => {
      await ensureDatabase(info, name);
      const pool = new pg.Pool({ connectionString: info.urlFor(name), max: 2 });
      // The server is stopped at exit; a client still closing may hear the shutdown first.
      pool.on("error", () => {});
      pools.push(pool);
      return pool;
    };
    // A new installation.
    const fresh = await db("bench_fresh");
    await migrate(fresh);
    // An upgraded one: migrations before 004, legacy bindings for keys legacy-0.., then 004.
    const upgraded = await db("bench_upgraded");
    await migrateBefore(upgraded, 4);
    // Legacy bindings: take the fingerprint digests from a throwaway binding made by the core.
    const scratch = new Queue({ pool: fresh, maintenance: false, keySecret: randomBytes(32) });
    const sj = await scratch.enqueue("bench", {}, { idempotency: { key: "x", scope: "scratch", ttlMs: 3_600_000 } });
    await scratch.close();
    const d = (
      await fresh.query<{ field_digests: string[] }>(
        "select field_digests from workhorse.idempotency_binding where job_id = $1",
        [sj],
      )
    ).rows[0]?.field_digests as string[];
    const digests = [...d.slice(0, 4), ...d.slice(5)];
    for (let n = 0; n < CALLS; n++) {
      await upgraded.query(
        `select workhorse.enqueue_one(gen_random_uuid(), 'default', 'bench', '{}'::jsonb, null, 25, null, null, null, null,
           '{}'::text[], 'idempotency', 'bench', $1::bytea, 'leg…', 10, 3600000, $2::text[], false)`,
        [sha256("bench", `legacy-${n}`), digests],
      );
    }
    await migrate(upgraded);

    const mixed = (prefix: string) => (n: number) => `${prefix}-${n % 2 === 0 ? n : n - 1}`;
    await run("no window", fresh, mixed("fresh"));
    await run("window, miss", upgraded, mixed("new"));
    await run("window, legacy hit", upgraded, (n) => `legacy-${n}`);
    for (const p of pools) await p.end();
  } finally {
    await stopEmbeddedPostgres();
  }
}

await main();
