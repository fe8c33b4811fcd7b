/**
 * A Queue on a database whose workhorse schema is behind this code says so before it sends a call's
 * statements: `SchemaBehindError` with the database's version, the version needed and the command
 * to run, nothing written; once migrated, the same Queue goes on.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { MIGRATE_COMMAND, migrate, Queue, SchemaBehindError, WorkhorseError } from "../lib/enqueue";
import { migrateBefore } from "../lib/enqueue/migrate-before";
import { migrations } from "../lib/enqueue/migrations.generated";
import { emptyDatabases } from "./helpers";

const latest = Math.max(...migrations.map((m) => m.version));
const databases = emptyDatabases("behind");
const pools: pg.Pool[] = [];
const queues: Queue[] = [];

async function freshPool(): Promise<pg.Pool> {
  return (await databases.make()).pool;
}

function queueOn(pool: pg.Pool): Queue {
  const q = new Queue({ pool, maintenance: false });
  queues.push(q);
  return q;
}

beforeAll(() => {
  expect(latest).toBeGreaterThan(1);
});

afterAll(async () => {
  for (const q of queues) await q.close();
  for (const p of pools) await p.end();
});

test("a database never migrated: SchemaBehindError naming the command, and no schema made", async () => {
  const pool = await freshPool();
  const q = queueOn(pool);
  const err = await q.enqueue("invoice.capture", { invoiceId: "INV-1" }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SchemaBehindError);
  expect(err).toBeInstanceOf(WorkhorseError);
  expect(err).toMatchObject({ code: "SCHEMA_BEHIND", databaseVersion: 0, requiredVersion: latest });
  expect((err as Error).message).toContain(MIGRATE_COMMAND);
  const { rows } = await pool.query("select to_regnamespace('workhorse') is null as absent");
  expect(rows[0].absent).toBe(true);
});

test("one migration behind: refused for keyed, keyless and batched calls, nothing written; after migrate() the same Queue enqueues", async () => {
  const pool = await freshPool();
  await migrateBefore(pool, latest);
  const q = queueOn(pool);
  const keyed = { idempotency: { key: "capture:INV-2", scope: "invoice-capture" } };
  for (const call of [
    () => q.enqueue("invoice.capture", { invoiceId: "INV-2" }, keyed),
    () => q.enqueue("invoice.capture", { invoiceId: "INV-2" }),
    () => q.enqueueMany([{ type: "invoice.capture", payload: { invoiceId: "INV-3" } }]),
    () => q.findBinding({ key: "capture:INV-2", scope: "invoice-capture" }),
  ]) {
    const err = await call().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaBehindError);
    expect(err).toMatchObject({ databaseVersion: latest - 1, requiredVersion: latest });
  }
  const jobs = async () => Number((await pool.query("select count(*) as n from workhorse.job")).rows[0].n);
  expect(await jobs()).toBe(0);

  await migrate(pool);
  const { jobId, outcome } = await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-2" }, keyed);
  expect(outcome).toBe("accepted");
  expect(await q.enqueueWithResult("invoice.capture", { invoiceId: "INV-2" }, keyed)).toMatchObject({
    jobId,
    outcome: "replayed",
  });
  expect(await jobs()).toBe(1);
});

test("the current version with an older function set (a deploy that did not migrate): refused", async () => {
  const pool = await freshPool();
  await migrate(pool);
  // What an earlier deploy's migrate() left, this code's functions never applied.
  await pool.query("delete from workhorse.function_set");
  await pool.query("insert into workhorse.function_set (digest, layout) values ('an-older-deploy', 'single')");
  const err = await queueOn(pool)
    .enqueue("invoice.capture", { invoiceId: "INV-4" })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SchemaBehindError);
  expect(err).toMatchObject({ databaseVersion: latest, requiredVersion: latest });
  expect((err as Error).message).toMatch(/functions are not this code's/);
});

test("an unreachable server is not reported as a schema behind: the call's own error says what happened", async () => {
  const pool = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:1/none", connectionTimeoutMillis: 2000 });
  pools.push(pool);
  const err = await new Queue({ pool, maintenance: false, retry: false })
    .enqueue("invoice.capture", { invoiceId: "INV-5" })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkhorseError);
  expect(err).not.toBeInstanceOf(SchemaBehindError);
  expect(err).toMatchObject({ code: "DATABASE" });
});
