// The console's connections and instruments name their database (lib/console/databases/session.ts),
// on two real databases: the audit rows of operator actions record the database they ran on, and the
// console process's counters carry a `database` attribute.
import type { Attributes } from "@opentelemetry/api";
import { MeterProvider, type MetricData, MetricReader } from "@opentelemetry/sdk-metrics";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { enqueueTestJob, purgeJob } from "../lib/console/actions/mutations";
import type { DatabaseConfig } from "../lib/console/databases/databases";
import { DATABASE_ATTRIBUTE, databaseMeterProvider, databasePool } from "../lib/console/databases/session";
import { listAudit } from "../lib/console/reads/audit";
import { TELEMETRY_METRICS as METRICS, Queue } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const eu = setupQueueTests();
const us = setupQueueTests();

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function config(name: string, url: string): DatabaseConfig {
  return { name, url, readonly: false, production: false, distributed: false, keySecretEnv: null };
}

const reader = new TestReader();
const meterProvider = new MeterProvider({ readers: [reader] });
const consoles: { name: string; pool: pg.Pool; queue: Queue }[] = [];

beforeAll(async () => {
  await Promise.all([eu.ready(), us.ready()]);
  // As lib/console/databases/db.ts opens each configured database.
  for (const [name, url] of [
    ["EU", eu.url],
    ["US-East", us.url],
  ] as const) {
    const pool = databasePool(config(name, url), { max: 3 });
    const queue = new Queue({
      pool,
      maintenance: false,
      source: "console",
      telemetry: { meterProvider: databaseMeterProvider(meterProvider, name) },
    });
    consoles.push({ name, pool, queue });
  }
});

afterAll(async () => {
  for (const c of consoles) {
    await c.queue.close();
    await c.pool.end();
  }
  await meterProvider.shutdown();
});

function form(fields: Record<string, string>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  return f;
}

describe("the audit log records the database", () => {
  test("every connection of the pool carries the name, before its first statement, without a warning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on("warning", onWarning);
    const pool = databasePool(config("EU", eu.url), { max: 4 });
    try {
      // Four connections opened at once, each asked right away.
      const names = await Promise.all(
        Array.from({ length: 4 }, () =>
          pool.query<{ name: string }>("select current_setting('workhorse.database') as name, pg_sleep(0.05)"),
        ),
      );
      expect(names.map((r) => r.rows[0]?.name)).toEqual(["EU", "EU", "EU", "EU"]);
      expect(pool.totalCount).toBe(4);
    } finally {
      await pool.end();
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });

  test("a purge (audited by its SQL function) and a test enqueue (audited by the console) name the database they ran on", async () => {
    const [euConsole, usConsole] = consoles as [(typeof consoles)[0], (typeof consoles)[0]];
    const euJob = await eu.queue().enqueue("report.build", { n: 1 }, { queue: "audit-db" });
    const usJob = await us.queue().enqueue("report.build", { n: 2 }, { queue: "audit-db" });
    expect(await purgeJob(euConsole.queue, "alice", form({ jobId: euJob, reason: "wrong region" }))).toMatchObject({
      status: "done",
      purged: 1,
    });
    expect(await purgeJob(usConsole.queue, "bob", form({ jobId: usJob, reason: "duplicate" }))).toMatchObject({
      status: "done",
      purged: 1,
    });
    expect(await enqueueTestJob(usConsole.queue, "bob", form({ type: "probe.run", queue: "audit-db" }))).toMatchObject({
      status: "done",
    });
    const rows = (t: typeof eu) =>
      t.sql<{ actor: string; action: string; database: string | null }>(
        "select actor, action, database from workhorse.operator_audit order by at, action",
      );
    expect(await rows(eu)).toEqual([{ actor: "alice", action: "purge_job", database: "EU" }]);
    expect(await rows(us)).toEqual([
      { actor: "bob", action: "purge_job", database: "US-East" },
      { actor: "bob", action: "enqueue_test", database: "US-East" },
    ]);
    // The audit page's read shows it.
    const page = await listAudit(usConsole.pool, {});
    expect(page.rows.map((r) => [r.action, r.database])).toEqual([
      ["enqueue_test", "US-East"],
      ["purge_job", "US-East"],
    ]);
  });

  test("an action taken outside a console (a script's own pool) records no database", async () => {
    await eu.queue().recordOperatorAction({ actor: "script", action: "note", target: "maintenance", result: {} });
    expect(await eu.sql("select database from workhorse.operator_audit where actor = 'script'")).toEqual([
      { database: null },
    ]);
  });
});

describe("the console's counters name the database", () => {
  /** Each data point of `name` as [database, value], summed over the other attributes where `match` holds. */
  async function byDatabase(name: string, match: Attributes = {}): Promise<Record<string, number>> {
    const { resourceMetrics } = await reader.collect();
    const all: MetricData[] = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const out: Record<string, number> = {};
    for (const p of all.find((m) => m.descriptor.name === name)?.dataPoints ?? []) {
      if (!Object.entries(match).every(([k, v]) => p.attributes[k] === v)) continue;
      const db = String(p.attributes[DATABASE_ATTRIBUTE]);
      out[db] = (out[db] ?? 0) + (p.value as number);
    }
    return out;
  }

  test("enqueue decisions and operator actions are counted per database", async () => {
    const [euConsole, usConsole] = consoles as [(typeof consoles)[0], (typeof consoles)[0]];
    const before = await byDatabase(METRICS.decisions, { "messaging.destination.name": "otel-db" });
    await euConsole.queue.enqueue("a", {}, { queue: "otel-db", idempotency: { key: "k1" } });
    await euConsole.queue.enqueue("a", {}, { queue: "otel-db", idempotency: { key: "k1" } });
    await usConsole.queue.enqueue("a", {}, { queue: "otel-db", idempotency: { key: "k1" } });
    expect(before).toEqual({});
    expect(await byDatabase(METRICS.decisions, { "messaging.destination.name": "otel-db" })).toEqual({
      EU: 2,
      "US-East": 1,
    });
    const job = await usConsole.queue.enqueue("a", {}, { queue: "otel-db-cancel" });
    await usConsole.queue.cancel({ jobIds: [job] }, { actor: "bob", reason: "test" });
    expect(await byDatabase(METRICS.operatorJobs, { "workhorse.operator.action": "cancel" })).toEqual({ "US-East": 1 });
  });
});
