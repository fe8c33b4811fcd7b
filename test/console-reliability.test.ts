// Console defects found under restarts and bad input: a NUL byte in a filter, a test
// enqueue whose audit row could be lost, operator text PostgreSQL cannot store.
import { readdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { EnqueueValidationError } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { enqueueTestJob } = await import("@/lib/console/actions/mutations");
const { parseAuditFilters, parseBindingFilters, parseJobFilters, parseObservationFilters } = await import(
  "@/lib/console/reads/filters"
);
const { listJobs, stateTabCounts } = await import("@/lib/console/reads/jobs");
const { lookupDigest } = await import("@/lib/console/reads/digest");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("filters holding characters PostgreSQL text cannot store are dropped", () => {
  for (const bad of ["%00", "billing%00", "%01x"]) {
    test(`value ${bad}`, () => {
      const p = (q: string) => new URLSearchParams(q);
      expect(parseJobFilters(p(`queue=${bad}&type=${bad}&tag=${bad}`))).toEqual({
        queue: undefined,
        type: undefined,
        state: undefined,
        tag: undefined,
        after: undefined,
        before: undefined,
      });
      expect(parseBindingFilters(p(`scope=${bad}`)).scope).toBeUndefined();
      expect(parseObservationFilters(p(`scope=${bad}&queue=${bad}`))).toMatchObject({
        scope: undefined,
        queue: undefined,
      });
      expect(parseAuditFilters(p(`actor=${bad}`)).actor).toBeUndefined();
    });
  }

  test("the jobs read model answers a NUL filter instead of failing", async () => {
    const q = t.queue();
    await q.enqueue("nul.check", {}, { queue: "nul-filter" });
    const page = await listJobs(t.pool, parseJobFilters(new URLSearchParams("queue=%00")));
    expect(page.rows.length).toBeGreaterThan(0);
  });
});

test("a test enqueue and its audit row commit together: when the audit write fails, no job is left behind", async () => {
  const q = t.queue();
  await t.sql(`create function pg_temp_fail_audit() returns trigger language plpgsql as $$
                begin raise exception 'audit storage unavailable'; end $$`);
  await t.sql(`create trigger fail_audit before insert on workhorse.operator_audit
                for each row when (new.action = 'enqueue_test') execute function pg_temp_fail_audit()`);
  try {
    const form = new FormData();
    form.set("type", "atomic.check");
    form.set("payload", "{}");
    const err = await enqueueTestJob(q, "alice", form).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/audit storage unavailable/);
    expect(await t.count("job", "type = 'atomic.check'")).toBe(0);
    expect(await t.count("job_event", "job_id not in (select id from workhorse.job)")).toBe(0);
  } finally {
    await t.sql("drop trigger fail_audit on workhorse.operator_audit");
    await t.sql("drop function pg_temp_fail_audit()");
  }
  const form = new FormData();
  form.set("type", "atomic.check");
  form.set("payload", "{}");
  const ok = await enqueueTestJob(q, "alice", form);
  expect(ok.status).toBe("done");
  expect(await t.count("job", "type = 'atomic.check'")).toBe(1);
  expect(await t.count("operator_audit", "action = 'enqueue_test' and actor = 'alice'")).toBeGreaterThanOrEqual(1);
});

describe("operator text PostgreSQL cannot store is a validation error, nothing written", () => {
  test("purge with a NUL in the actor or reason", async () => {
    const q = t.queue();
    const id = await q.enqueue("t", {}, { queue: "nul-purge" });
    const before = await t.count("operator_audit");
    for (const ctx of [
      { actor: "eve\u0000", reason: "x" },
      { actor: "eve", reason: "why\u0000" },
      { actor: "eve", reason: "\ud800" },
    ]) {
      const err = await q.purge({ jobId: id }, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EnqueueValidationError);
      expect((err as EnqueueValidationError).rule).toBe("must be well-formed Unicode without NUL characters");
    }
    expect(await t.count("operator_audit")).toBe(before);
    expect((await q.getJob(id))?.state).toBe("ready");
  });

  test("recordOperatorAction with a NUL in target, reason or result", async () => {
    const q = t.queue();
    const before = await t.count("operator_audit");
    const base = { actor: "eve", action: "enqueue_test", target: "job:x", result: {} };
    for (const [entry, option] of [
      [{ ...base, target: "job:\u0000" }, "target"],
      [{ ...base, reason: "r\u0000" }, "reason"],
      [{ ...base, result: { note: "\u0000" } }, "result"],
    ] as const) {
      const err = await q.recordOperatorAction(entry).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EnqueueValidationError);
      expect((err as EnqueueValidationError).option).toBe(option);
    }
    expect(await t.count("operator_audit")).toBe(before);
  });
});

describe("console checkouts survive a killed backend", () => {
  const root = path.resolve(import.meta.dirname, "..");

  test("no code in lib/ or app/ checks a client out with pool.connect(): only withPoolClient does", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts")) files.push(p);
      }
    };
    walk(path.join(root, "lib"));
    walk(path.join(root, "app"));
    files.push(path.join(root, "proxy.ts"));
    const config = ts.parseJsonConfigFileContent(
      ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile).config,
      ts.sys,
      root,
    );
    const program = ts.createProgram(files, { ...config.options, noEmit: true });
    const checker = program.getTypeChecker();
    const found: string[] = [];
    for (const file of files) {
      if (file.endsWith(path.join("lib", "store", "pool-client.ts"))) continue;
      const sf = program.getSourceFile(file);
      if (!sf) throw new Error(`not in the program: ${file}`);
      const visit = (n: ts.Node) => {
        if (
          ts.isCallExpression(n) &&
          ts.isPropertyAccessExpression(n.expression) &&
          n.expression.name.text === "connect"
        ) {
          // A Pool (pg.Pool or anything shaped like one: it counts its clients), not a pg.Client.
          const type = checker.getTypeAtLocation(n.expression.expression);
          const text = n.expression.expression.getText(sf);
          if (type.getProperty("totalCount") || type.getProperty("idleCount") || /pool/i.test(text)) {
            const { line } = sf.getLineAndCharacterOfPosition(n.getStart(sf));
            found.push(`${path.relative(root, file)}:${line + 1} ${n.getText(sf)}`);
          }
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(files.length).toBeGreaterThan(50);
    expect(found).toEqual([]);
  });

  /**
   * A pool whose clients have their own backend terminated (pg_terminate_backend, from another
   * connection) just before sending the first query matching `pattern`: the connection dies while
   * the client is lent out, as when PostgreSQL restarts under a request.
   */
  function killingPool(pattern: RegExp) {
    const admin = new pg.Pool({ connectionString: t.url, max: 1 });
    const state = { armed: true, killed: 0 };
    class KillingClient extends pg.Client {
      // biome-ignore lint/suspicious/noExplicitAny: pg's query has many overloads; all are passed on as they came
      override query(...args: any[]): any {
        const text: unknown = typeof args[0] === "string" ? args[0] : args[0]?.text;
        if (state.armed && typeof text === "string" && pattern.test(text)) {
          state.armed = false;
          const pid = (this as unknown as { processID: number }).processID;
          return admin.query("select pg_terminate_backend($1::int)", [pid]).then(() => {
            state.killed++;
            // biome-ignore lint/suspicious/noExplicitAny: as above
            return (super.query as any)(...args);
          });
        }
        // biome-ignore lint/suspicious/noExplicitAny: as above
        return (super.query as any)(...args);
      }
    }
    const pool = new pg.Pool({ connectionString: t.url, max: 4, Client: KillingClient });
    pool.on("error", () => {}); // an idle client's death is the pool's business (it drops the client)
    return { pool, state, end: () => Promise.all([pool.end(), admin.end()]) };
  }

  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  beforeAll(() => {
    process.on("uncaughtException", onUncaught);
  });
  afterAll(() => {
    process.off("uncaughtException", onUncaught);
  });

  test("a digest lookup whose observation search loses its backend answers (one retry), nothing uncaught", async () => {
    const q = t.queue();
    const idempotency = { key: "kill-digest-key", scope: "kill-digest" };
    await q.enqueue("kill.digest", {}, { queue: "kill-digest", idempotency });
    await q.enqueue("kill.digest", {}, { queue: "kill-digest", idempotency }); // a replay: one observation
    await q.flushObservations();
    const { keyDigest } = await q.describeKey(idempotency);
    const k = killingPool(/from workhorse\.enqueue_observation/);
    try {
      uncaught.length = 0;
      const r = await lookupDigest(k.pool, keyDigest);
      await new Promise((res) => setTimeout(res, 50)); // let a late 'error' event surface
      expect(k.state.killed).toBe(1);
      expect(uncaught).toEqual([]);
      expect(r.bindings.length).toBe(1);
      expect(r.observationsComplete).toBe(true);
      expect(r.observations.length).toBe(1);
    } finally {
      await k.end();
    }
  });

  test("the jobs page's tab counts lose their backend mid-count: an answer (one retry), nothing uncaught", async () => {
    const q = t.queue();
    await q.enqueue("kill.count", {}, { queue: "kill-count" });
    const k = killingPool(/group by state/);
    try {
      uncaught.length = 0;
      const r = await stateTabCounts(k.pool, parseJobFilters(new URLSearchParams("type=kill.count")));
      await new Promise((res) => setTimeout(res, 50));
      expect(k.state.killed).toBe(1);
      expect(uncaught).toEqual([]);
      expect(r.counts.all).toEqual({ value: 1, estimated: false });
    } finally {
      await k.end();
    }
  });

  test("a backend lost on every try is a rejected promise, not a crash", async () => {
    const k = killingPool(/from workhorse\.enqueue_observation/);
    const rearm = setInterval(() => {
      k.state.armed = true;
    }, 1);
    try {
      uncaught.length = 0;
      const err = await lookupDigest(k.pool, "0123456789ab").catch((e: unknown) => e);
      await new Promise((res) => setTimeout(res, 50));
      expect(err).toBeInstanceOf(Error);
      expect(uncaught).toEqual([]);
    } finally {
      clearInterval(rearm);
      await k.end();
    }
  });
});
