/**
 * Server response time of the console's jobs page and find-by-key on a database of 1,000,000 jobs.
 *
 *   npx tsx e2e/perf/console-1m.ts [--jobs 1000000] [--runs 15]
 *
 * 1. A private embedded PostgreSQL (lib/db startPrivateServer, temp dir, deleted after), migrated.
 * 2. Seeds with set-based SQL (insert … select generate_series): N jobs with time-ordered UUIDv7
 *    ids over the last ~14 hours, one `enqueued` event each, and N bindings (one per job; half live,
 *    half expired) whose key hashes are SHA-256(scope ‖ 0x1F ‖ key), as versions before the keyed
 *    HMAC computed them (find-by-key looks up both the keyed and the legacy hash).
 *    Then VACUUM ANALYZE.
 * 3. Starts the built console (scripts/serve.ts, loopback, no password) on that database and times,
 *    server side (first byte to last byte over loopback, no browser), the median of `runs` requests:
 *    GET /jobs, GET /jobs?after=<cursor>, GET /jobs?state=scheduled, GET /api/jobs, and the
 *    find-by-key server action (POST, captured once from a real browser submit, then replayed).
 */
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { chromium } from "@playwright/test";
import pg from "pg";
import { ensureDatabase, startPrivateServer, stopEmbeddedPostgres } from "../../lib/db";
import { migrate } from "../../lib/enqueue";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg("jobs", 1_000_000);
const RUNS = arg("runs", 15);
const root = path.resolve(import.meta.dirname, "..", "..");

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

async function time(label: string, fn: () => Promise<void>, runs = RUNS) {
  await fn(); // warm-up (plan cache, connection)
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  process.stdout.write(
    `${label.padEnd(46)} median ${median(xs).toFixed(1).padStart(7)} ms   min ${Math.min(...xs).toFixed(1)}   max ${Math.max(...xs).toFixed(1)}  (n=${runs})\n`,
  );
}

async function main() {
  const info = await startPrivateServer({ ephemeral: true });
  await ensureDatabase(info, "workhorse");
  const url = info.urlFor("workhorse");
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await migrate(pool);
  const t0 = performance.now();
  await pool.query(
    `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, tags, created_at, updated_at)
     select id, (array['orders','billing','email','media','webhooks'])[1 + g % 5], 'bench.job.' || (g % 20),
            jsonb_build_object('n', g, 'customer', 'c_' || (g % 5000)),
            case when g % 100 = 0 then 'scheduled' when g % 3 = 0 then 'succeeded' else 'ready' end,
            ts, 25, case when g % 7 = 0 then array['vip'] else array['web'] end, ts, ts
       from (select g, to_timestamp((ms)::double precision / 1000) as ts,
                    (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid as id
               from (select g, (extract(epoch from now()) * 1000)::bigint - ($1::bigint - g) * 50 as ms, md5(g::text) as h
                       from generate_series(1, $1::bigint) g) a) b`,
    [N],
  );
  const t1 = performance.now();
  await pool.query(
    `insert into workhorse.job_event (job_id, at, kind, data)
     select j.id, j.created_at, 'enqueued', jsonb_build_object('queue', j.queue, 'scope', 'bench-' || (n % 10),
            'keyDigest', left(encode(sha256(convert_to('bench-' || (n % 10), 'UTF8') || '\\x1f'::bytea || convert_to('order-' || n, 'UTF8')), 'hex'), 12))
       from (select id, queue, created_at, (payload->>'n')::bigint as n from workhorse.job) j`,
  );
  await pool.query(
    `insert into workhorse.key_binding (scope, key_hash, job_id, mode, key_preview, key_length, field_digests,
                                        request_digest, ttl_ms, created_at, expires_at)
     select 'bench-' || (n % 10),
            sha256(convert_to('bench-' || (n % 10), 'UTF8') || '\\x1f'::bytea || convert_to('order-' || n, 'UTF8')),
            id, 'idempotency', left('order-' || n, 2) || '…', length('order-' || n),
            substring(sha512(convert_to(n::text, 'UTF8')) || sha256(convert_to(n::text, 'UTF8')) from 1 for 88),
            sha256(convert_to(n::text, 'UTF8')), 86400000, created_at,
            case when n % 2 = 0 then now() + interval '1 hour' + n * interval '1 millisecond'
                 else now() - interval '1 hour' - n * interval '1 millisecond' end
       from (select id, created_at, (payload->>'n')::bigint as n from workhorse.job) j`,
  );
  // Jobs carry their key: the job page finds its binding through it.
  await pool.query(
    `update workhorse.job j set key_scope = b.scope, key_hash = b.key_hash
       from workhorse.key_binding b where b.job_id = j.id`,
  );
  const t2 = performance.now();
  await pool.query("vacuum analyze");
  const sizes = await pool.query<{ t: string; n: string }>(
    `select 'jobs' as t, count(*)::text as n from workhorse.job union all
     select 'bindings', count(*)::text from workhorse.key_binding union all
     select 'events', count(*)::text from workhorse.job_event`,
  );
  process.stdout.write(
    `seeded ${sizes.rows.map((r) => `${r.n} ${r.t}`).join(", ")} in ${((t2 - t0) / 1000).toFixed(1)} s (jobs ${((t1 - t0) / 1000).toFixed(1)} s)\n`,
  );

  const port = await freePort();
  const server = spawn(process.execPath, ["--import", "tsx", "scripts/serve.ts"], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: "production",
      DATABASE_URL: url,
      WORKHORSE_CONSOLE_PASSWORD: "",
      HOST: "127.0.0.1",
      PORT: String(port),
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await fetch(`${base}/sign-in`, { redirect: "manual" });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const get = (p: string) => async () => {
      const res = await fetch(base + p);
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${p}: ${res.status} ${body.slice(0, 200)}`);
    };
    const first = (await (await fetch(`${base}/api/jobs`)).json()) as { next: string };
    await time("GET /jobs (newest 50, SSR HTML)", get("/jobs"));
    await time("GET /jobs?after=<cursor> (page 2)", get(`/jobs?after=${first.next}`));
    await time("GET /jobs?queue=billing&tag=vip", get("/jobs?queue=billing&tag=vip"));
    await time("GET /jobs?state=scheduled (1% of rows)", get("/jobs?state=scheduled"));
    await time("GET /api/jobs (poll JSON)", get("/api/jobs"));
    await time("GET /bindings (live, SSR HTML)", get("/bindings"));
    await time("GET / (overview, counts cached 15 s)", get("/"));

    // Capture one real find-by-key submission, then replay it (server time only).
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    const page = await browser.newPage();
    await page.goto(`${base}/find`);
    const captured: { headers: Record<string, string>; body: string }[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST") captured.push({ headers: r.headers(), body: r.postData() ?? "" });
    });
    const lookup = async (scope: string, key: string) => {
      captured.length = 0;
      await page.getByLabel("Scope").fill(scope);
      await page.getByLabel("Key", { exact: true }).fill(key);
      await page.getByRole("button", { name: "Find" }).click();
      await page.getByTestId("find-answer").waitFor();
      const c = captured[0];
      if (!c) throw new Error("no POST captured");
      return c;
    };
    const live = await lookup("bench-4", `order-${N - 6}`);
    const expired = await lookup("bench-3", `order-${N - 7}`);
    const missing = await lookup("bench-1", "order-never-used");
    await page.getByText("No live binding for this key").waitFor();
    const answer = await page.getByTestId("find-answer").textContent();
    await browser.close();
    const post = (c: { headers: Record<string, string>; body: string }) => async () => {
      const res = await fetch(`${base}/find`, {
        method: "POST",
        headers: {
          "next-action": c.headers["next-action"] ?? "",
          "content-type": c.headers["content-type"] ?? "",
          accept: "text/x-component",
          origin: base,
        },
        body: c.body,
      });
      const text = await res.text();
      if (res.status !== 200 || !/"status":"(found|none)"/.test(text))
        throw new Error(`find: ${res.status} ${text.slice(0, 300)}`);
    };
    await time("POST find-by-key (live binding)", post(live));
    await time("POST find-by-key (expired binding)", post(expired));
    await time("POST find-by-key (no binding: history search)", post(missing), 7);
    process.stdout.write(`  (no-binding answer: ${answer?.replace(/\s+/g, " ").slice(0, 160)})\n`);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await pool.end();
    await stopEmbeddedPostgres();
  }
}

main().catch(async (err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  await stopEmbeddedPostgres().catch(() => {});
  process.exit(1);
});
