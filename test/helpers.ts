import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { migrate, Queue, type QueueOptions } from "../lib/enqueue";
import { distributedTests, prepareCitusDatabase } from "./citus";

function urlFor(adminUrl: string, db: string): string {
  const u = new URL(adminUrl);
  u.pathname = `/${db}`;
  return u.toString();
}

/**
 * Drops a test database once the connections this process closed have really gone (a forced drop
 * would otherwise kill backends whose clients are still closing, and they would report 57P01), and
 * forces it after 5 s for anything left behind by a crashed test.
 */
export async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await admin.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = $1 and backend_type = 'client backend' and application_name not like 'citus%'",
      [name],
    );
    if (Number(rows[0]?.n ?? 0) === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await admin.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
}

/** Creates the database and returns a helper that builds queues closed after the file. */
export function setupQueueTests(options: { max?: number } = {}) {
  const adminUrl = inject("adminUrl");
  const template = inject("templateDatabase");
  const name = template.replace("template", `f${randomBytes(4).toString("hex")}`);
  const url = urlFor(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 20 });
  const queues: Queue[] = [];
  const created = (async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    if (distributedTests()) {
      await admin.query(`create database ${pg.escapeIdentifier(name)}`);
      await admin.end();
      await prepareCitusDatabase(adminUrl, url);
      const p = new pg.Pool({ connectionString: url, max: 1 });
      await migrate(p, { distributed: true });
      await p.end();
      return;
    }
    await admin.query(`create database ${pg.escapeIdentifier(name)} template ${pg.escapeIdentifier(template)}`);
    await admin.end();
  })();
  afterAll(async () => {
    for (const q of queues) await q.close();
    await pool.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await dropDatabase(admin, name);
    await admin.end();
  });
  return {
    url,
    pool,
    ready: () => created,
    queue(opts: Partial<QueueOptions> = {}): Queue {
      const q = new Queue({ pool, maintenance: false, ...opts });
      queues.push(q);
      return q;
    },
    async sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
      return (await pool.query<R>(text, values)).rows;
    },
    async count(table: string, where = "true"): Promise<number> {
      const { rows } = await pool.query<{ n: string }>(`select count(*) as n from workhorse.${table} where ${where}`);
      return Number(rows[0]?.n ?? 0);
    },
  };
}
