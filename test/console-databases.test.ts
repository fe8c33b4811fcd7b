// Several databases in one console, on real databases: each hashes keys with its own installation
// secret, find by key and by digest ask every one at once, and the fleet read shows a database that
// is down or has no schema while the others answer.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, test, vi } from "vitest";
import type { DatabaseConfig } from "../lib/console/databases/databases";
import type { ConsoleDb } from "../lib/console/databases/db";
import { findDigestEverywhere, findKeyEverywhere } from "../lib/console/reads/find-everywhere";
import { readFleet } from "../lib/console/reads/fleet";
import { freePort } from "../lib/db";
import { Queue, schemaStatus } from "../lib/enqueue";
import { dropDatabase, setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const eu = setupQueueTests();
const us = setupQueueTests();

function config(name: string, url: string): DatabaseConfig {
  return { name, url, readonly: false, production: false, distributed: false, keySecretEnv: null };
}

const opened: ConsoleDb[] = [];
const pools: pg.Pool[] = [];
let databases: DatabaseConfig[];
let byName: Map<string, ConsoleDb>;
const open = (d: DatabaseConfig): ConsoleDb => {
  const db = byName.get(d.name);
  if (!db) throw new Error(`no database ${d.name}`);
  return db;
};

const emptyName = `w32_empty_${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  await Promise.all([eu.ready(), us.ready()]);
  // Both were cloned from one template: give US an installation secret of its own.
  await us.sql(
    "update workhorse.installation set key_secret = sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))",
  );
  const admin = new pg.Client({ connectionString: inject("adminUrl") });
  await admin.connect();
  await admin.query(`create database ${emptyName}`);
  await admin.end();
  const emptyUrl = new URL(inject("adminUrl"));
  emptyUrl.pathname = `/${emptyName}`;
  const down = `postgres://postgres@127.0.0.1:${await freePort()}/gone`;
  databases = [config("EU", eu.url), config("US", us.url), config("Fresh", emptyUrl.toString()), config("Gone", down)];
  byName = new Map();
  for (const d of databases) {
    const pool = new pg.Pool({ connectionString: d.url, max: 2, connectionTimeoutMillis: 5000 });
    pool.on("error", () => {});
    pools.push(pool);
    // As the console opens them with several databases: each its database's own secret.
    const db: ConsoleDb = { config: d, pool, queue: new Queue({ pool, maintenance: false, keySecret: "" }) };
    opened.push(db);
    byName.set(d.name, db);
  }
});

afterAll(async () => {
  for (const db of opened) await db.queue.close();
  for (const p of pools) await p.end();
  const admin = new pg.Client({ connectionString: inject("adminUrl") });
  await admin.connect();
  await dropDatabase(admin, emptyName);
  await admin.end();
});

describe("per-database secret", () => {
  test("the same key has another digest in each database", async () => {
    const key = { key: "order:ORD-123", scope: "checkout" };
    const [a, b] = await Promise.all([
      open(databases[0] as DatabaseConfig).queue.describeKey(key),
      open(databases[1] as DatabaseConfig).queue.describeKey(key),
    ]);
    expect(a.keyDigest).toMatch(/^[0-9a-f]{12}$/);
    expect(b.keyDigest).toMatch(/^[0-9a-f]{12}$/);
    expect(a.keyDigest).not.toBe(b.keyDigest);
  });
});

describe("find across databases", () => {
  test("a key enqueued in one database is found there only, with its job", async () => {
    const euDb = open(databases[0] as DatabaseConfig);
    const key = `order:ORD-${randomBytes(3).toString("hex")}`;
    const jobId = await euDb.queue.enqueue(
      "order.ship",
      { n: 1 },
      { queue: "orders", idempotency: { key, scope: "checkout" } },
    );
    const rows = await findKeyEverywhere(databases, open, key, "checkout");
    expect(rows.map((r) => [r.database, r.status])).toEqual([
      ["EU", "found"],
      ["US", "none"],
      ["Fresh", "down"],
      ["Gone", "down"],
    ]);
    expect(rows[0]).toMatchObject({ jobId, jobState: "ready", queue: "orders" });
    expect(rows[3]?.message).toMatch(/ECONNREFUSED/);
    // The raw key is nowhere in the answer.
    expect(JSON.stringify(rows)).not.toContain(key);
  });

  test("a digest made by one database's secret is found in that database only", async () => {
    const usDb = open(databases[1] as DatabaseConfig);
    const key = `invoice:${randomBytes(3).toString("hex")}`;
    const jobId = await usDb.queue.enqueue("invoice.capture", { n: 2 }, { idempotency: { key, scope: "billing" } });
    const { keyDigest } = await usDb.queue.describeKey({ key, scope: "billing" });
    const rows = await findDigestEverywhere(databases, open, keyDigest);
    expect(rows.map((r) => [r.database, r.status])).toEqual([
      ["EU", "none"],
      ["US", "found"],
      ["Fresh", "down"],
      ["Gone", "down"],
    ]);
    expect(rows[1]?.jobId).toBe(jobId);
  });
});

describe("fleet", () => {
  test("each database's figures, a database without schema and one that is down, within the timeout", async () => {
    const euDb = open(databases[0] as DatabaseConfig);
    await euDb.queue.enqueue("fleet.probe", {}, { queue: "fleet" });
    const started = performance.now();
    const fleet = await readFleet(databases, open, 1500);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(fleet.map((f) => [f.name, f.status])).toEqual([
      ["EU", "ok"],
      ["US", "ok"],
      ["Fresh", "missing"],
      ["Gone", "down"],
    ]);
    const status = await schemaStatus(euDb.pool);
    expect(status.state).toBe("current");
    expect(fleet[0]?.schemaVersion).toBe(status.latest);
    expect(fleet[0]?.figures?.ready).toBeGreaterThanOrEqual(2);
    expect(fleet[1]?.figures?.ready).toBeGreaterThanOrEqual(1);
    expect(fleet[2]?.message).toBe("No Workhorse schema: run `npm run migrate -- --database Fresh`.");
    expect(fleet[3]?.message).toMatch(/ECONNREFUSED/);
  });

  test("a database that does not answer in time is shown as slow while the others answer", async () => {
    // A server that accepts the connection and never answers.
    const net = await import("node:net");
    const sockets: import("node:net").Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    const port = await new Promise<number>((resolve) =>
      silent.listen(0, "127.0.0.1", () => resolve((silent.address() as import("node:net").AddressInfo).port)),
    );
    const slowConfig = config("Silent", `postgres://postgres@127.0.0.1:${port}/x`);
    const slowPool = new pg.Pool({ connectionString: slowConfig.url, max: 1, connectionTimeoutMillis: 5000 });
    slowPool.on("error", () => {});
    const slowDb: ConsoleDb = {
      config: slowConfig,
      pool: slowPool,
      queue: new Queue({ pool: slowPool, maintenance: false }),
    };
    try {
      const started = performance.now();
      const fleet = await readFleet(
        [databases[0] as DatabaseConfig, slowConfig],
        (d) => (d.name === "Silent" ? slowDb : open(d)),
        500,
      );
      expect(performance.now() - started).toBeLessThan(1500);
      expect(fleet.map((f) => [f.name, f.status, f.message])).toEqual([
        ["EU", "ok", null],
        ["Silent", "slow", "No answer within 500 ms."],
      ]);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
      await slowDb.queue.close().catch(() => {});
      await slowPool.end().catch(() => {});
    }
  });
});
