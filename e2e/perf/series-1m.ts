/**
 * The health chart's series query (lib/console/reads/series.ts) on 1,000,000 jobs.
 *
 *   npx tsx --conditions=react-server e2e/perf/series-1m.ts [--jobs 1000000] [--runs 15]
 *
 * Seeds a private embedded PostgreSQL like console-1m.ts (N jobs, one every 50 ms, so 1,000,000
 * jobs span the last ~14 hours and all of them fall in the 24 h window), where a third of the jobs
 * succeeded and 1 % failed a few seconds after creation (finished_at set), plus one observation
 * (replayed or conflict) per 10 jobs. Then times series(): a process's first read (which
 * scans the whole window) and later reads (settled minutes come from memory), median of `runs`.
 */
import pg from "pg";
import { invalidateSeries, series } from "../../lib/console/reads/series";
import { ensureDatabase, startPrivateServer, stopEmbeddedPostgres } from "../../lib/db";
import { migrate } from "../../lib/enqueue";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N = arg("jobs", 1_000_000);
const RUNS = arg("runs", 15);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main() {
  const info = await startPrivateServer({ ephemeral: true });
  await ensureDatabase(info, "workhorse");
  const pool = new pg.Pool({ connectionString: info.urlFor("workhorse"), max: 4 });
  await migrate(pool);
  const t0 = performance.now();
  await pool.query(
    `insert into workhorse.job (id, queue, type, payload, state, run_at, max_attempts, tags, created_at, updated_at,
                                finished_at, last_error)
     select id, (array['orders','billing','email','media','webhooks'])[1 + g % 5], 'bench.job.' || (g % 20),
            jsonb_build_object('n', g), st, ts, 25, array['web'], ts, ts,
            case when st in ('succeeded', 'failed') then ts + interval '3 seconds' end,
            case when st = 'failed' then '{"name":"Error"}'::jsonb end
       from (select g, ts, id,
                    case when g % 100 = 0 then 'scheduled' when g % 100 = 1 then 'failed'
                         when g % 3 = 0 then 'succeeded' else 'ready' end as st
               from (select g, to_timestamp((ms)::double precision / 1000) as ts,
                            (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid as id
                       from (select g, (extract(epoch from now()) * 1000)::bigint - ($1::bigint - g) * 50 as ms,
                                    md5(g::text) as h
                               from generate_series(1, $1::bigint) g) a) b) c`,
    [N],
  );
  await pool.query(
    `insert into workhorse.enqueue_observation (at, outcome, queue, type, scope, key_preview, key_digest, key_length, job_id)
     select created_at + interval '1 second', case when (payload->>'n')::bigint % 20 = 0 then 'conflict' else 'replayed' end,
            queue, type, 'bench', 'or…', left(md5(id::text), 12), 10, id
       from workhorse.job where (payload->>'n')::bigint % 10 = 0`,
  );
  await pool.query("vacuum analyze");
  process.stdout.write(`seeded ${N} jobs in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  try {
    for (const [window, queue, cold] of [
      ["1h", null, true],
      ["24h", null, true],
      ["24h", null, false],
      ["1h", "billing", true],
      ["24h", "billing", false],
    ] as const) {
      const xs: number[] = [];
      let last = await series(pool, window, queue);
      for (let i = 0; i < RUNS; i++) {
        if (cold) invalidateSeries(pool);
        const t = performance.now();
        last = await series(pool, window, queue);
        xs.push(performance.now() - t);
      }
      process.stdout.write(
        `series ${window.padEnd(3)} ${(queue ?? "all queues").padEnd(10)} ${cold ? "first read" : "later reads"} median ${median(xs).toFixed(1).padStart(7)} ms   min ${Math.min(...xs).toFixed(1)}   max ${Math.max(...xs).toFixed(1)}   (accepted ${last.totals.accepted}, succeeded ${last.totals.succeeded}, replayed ${last.totals.replayed})\n`,
      );
    }
  } finally {
    await pool.end();
    await stopEmbeddedPostgres();
  }
}

main().catch(async (err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  await stopEmbeddedPostgres().catch(() => {});
  process.exit(1);
});
