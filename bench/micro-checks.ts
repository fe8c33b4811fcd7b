/**
 * Micro-benchmark: what CHECK constraints cost a one-row INSERT into a table shaped like
 * workhorse.job, against the same table without them and with the same rules as domains.
 *
 *   npx tsx bench/micro-checks.ts [--rows=3000] [--reps=7]
 *
 * Each variant inserts `rows` rows, one INSERT statement per row, inside one DO block (so commit
 * and client cost are excluded: this is the server's CPU per statement). Variants alternate, `reps`
 * times; the minimum per variant is reported (the least disturbed by other work on the machine).
 * PostgreSQL prepares a table's CHECK expressions anew for every INSERT statement's executor,
 * while a domain's checks are prepared once per backend (typcache) and compiled into the plan.
 */
import pg from "pg";
import { startBenchServer } from "./lib/env";

const DOMAINS = `
create domain wh_name as text check (char_length(value) between 1 and 128 and value !~ '[[:cntrl:]]');
create domain wh_state as text check (value in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged'));
create domain wh_attempt as integer check (value >= 0);
create domain wh_max_attempts as integer check (value between 1 and 1000);
create domain wh_timeout_ms as bigint check (value between 1 and 31536000000);
create domain wh_tags as text[] check (cardinality(value) <= 32);`;

const COLUMNS = (t: Record<string, string>) => `
  id uuid primary key, queue ${t.name ?? "text"} not null, type ${t.name ?? "text"} not null, payload jsonb not null,
  state ${t.state ?? "text"} not null, run_at timestamptz not null, attempt ${t.attempt ?? "integer"} not null default 0,
  max_attempts ${t.max ?? "integer"} not null, retry_policy jsonb, deadline timestamptz,
  execution_timeout_ms ${t.timeout ?? "bigint"}, concurrency_key text, tags ${t.tags ?? "text[]"} not null default '{}',
  created_at timestamptz not null default now(), updated_at timestamptz not null default now()`;

const CHECKS = `,
  check (char_length(queue) between 1 and 128 and queue !~ '[[:cntrl:]]'),
  check (char_length(type) between 1 and 128 and type !~ '[[:cntrl:]]'),
  check (state in ('scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled', 'purged')),
  check (attempt >= 0), check (max_attempts between 1 and 1000),
  check (execution_timeout_ms between 1 and 31536000000), check (cardinality(tags) <= 32),
  check (deadline is null or deadline > run_at)`;

const VARIANTS: Record<string, string> = {
  "no checks": `create table v_plain (${COLUMNS({})})`,
  "CHECK constraints (as workhorse.job)": `create table v_check (${COLUMNS({})}${CHECKS})`,
  "CHECK constraints without the two regexes": `create table v_check_noregex (${COLUMNS({})}${CHECKS.replace(
    / and (queue|type) !~ '\[\[:cntrl:\]\]'/g,
    "",
  )})`,
  "domains (same rules)": `create table v_domain (${COLUMNS({
    name: "wh_name",
    state: "wh_state",
    attempt: "wh_attempt",
    max: "wh_max_attempts",
    timeout: "wh_timeout_ms",
    tags: "wh_tags",
  })}, check (deadline is null or deadline > run_at))`,
};

function arg(name: string, def: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split("=")[1]) : def;
}

async function main() {
  const rows = arg("rows", 3000);
  const reps = arg("reps", 7);
  const server = await startBenchServer();
  try {
    const url = await server.freshDatabase("bench_micro_checks");
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(DOMAINS);
    const tables: Record<string, string> = {};
    for (const [label, ddl] of Object.entries(VARIANTS)) {
      await c.query(ddl);
      tables[label] = ddl.match(/create table (\w+)/)?.[1] as string;
    }
    const best: Record<string, number> = {};
    for (let r = 0; r < reps; r++) {
      for (const [label, table] of Object.entries(tables)) {
        await c.query(`truncate ${table}`);
        const t0 = performance.now();
        await c.query(`do $$ begin for i in 1..${rows} loop
          insert into ${table} (id, queue, type, payload, state, run_at, max_attempts, tags)
          values (gen_random_uuid(), 'billing', 'invoice.capture', '{"invoiceId": "INV-1", "amount": 4200}', 'ready',
                  now(), 25, '{}');
        end loop; end $$`);
        const us = ((performance.now() - t0) * 1000) / rows;
        best[label] = Math.min(best[label] ?? Number.POSITIVE_INFINITY, us);
      }
    }
    await c.end();
    const base = best["no checks"] as number;
    process.stdout.write(`one-row INSERT statements, ${rows} per run, best of ${reps} (server CPU per statement)\n`);
    for (const [label, us] of Object.entries(best)) {
      process.stdout.write(`${label.padEnd(40)} ${us.toFixed(1).padStart(7)} µs   +${(us - base).toFixed(1)} µs\n`);
    }
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
