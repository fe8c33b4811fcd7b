// Debounce "replaced" decisions listed beside the observations (lib/console/reads/observation-reads.ts,
// lib/store/console/replaced.ts) against real PostgreSQL, seeded through the core.
import { beforeAll, describe, expect, test, vi } from "vitest";
import { distributedTests } from "./citus";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { listObservations } = await import("@/lib/console/reads/observation-reads");
const { parseObservationFilters } = await import("@/lib/console/reads/filters");
const { replacedListRows, replacedPageBatched, replacedPageJoined } = await import("@/lib/store/console/replaced");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("replaced decisions as a list", () => {
  test("outcome=replaced lists each debounce replacement newest first with its job, key and both request digests; filters and pages like observations", async () => {
    const q = t.queue();
    const debounce = (key: string) => ({ key, scope: "search", windowMs: 600_000 });
    const a = await q.enqueueWithResult("search.reindex", { v: 1 }, { queue: "rp-a", debounce: debounce("shop-1") });
    expect(a.outcome).toBe("accepted");
    for (let v = 2; v <= 3; v++) {
      const r = await q.enqueueWithResult("search.reindex", { v }, { queue: "rp-a", debounce: debounce("shop-1") });
      expect(r).toMatchObject({ jobId: a.jobId, outcome: "replaced" });
    }
    const b = await q.enqueueWithResult("feed.rebuild", { v: 1 }, { queue: "rp-b", debounce: debounce("shop-2") });
    await q.enqueueWithResult("feed.rebuild", { v: 2 }, { queue: "rp-b", debounce: debounce("shop-2") });
    // An idempotent replay is an observation, not a replaced decision.
    const k = { key: "order-1", scope: "orders" };
    await q.enqueue("order.place", {}, { queue: "rp-a", idempotency: k });
    await q.enqueue("order.place", {}, { queue: "rp-a", idempotency: k });
    await q.flushObservations();

    const all = await listObservations(t.pool, parseObservationFilters({ outcome: "replaced" }));
    const mine = all.rows.filter((r) => r.queue.startsWith("rp-"));
    expect(mine.map((r) => [r.outcome, r.queue, r.type, r.jobId, r.scope, r.keyPreview, r.keyLength])).toEqual([
      ["replaced", "rp-b", "feed.rebuild", b.jobId, "search", "sh…", 6],
      ["replaced", "rp-a", "search.reindex", a.jobId, "search", "sh…", 6],
      ["replaced", "rp-a", "search.reindex", a.jobId, "search", "sh…", 6],
    ]);
    const [newestA, olderA] = mine.slice(1);
    // Each names the request it replaced and the one that replaced it: a chain.
    expect(olderA?.rejectedRequestDigest).toBe(newestA?.storedRequestDigest);
    expect(newestA?.storedRequestDigest).not.toBe(newestA?.rejectedRequestDigest);
    const [binding] = await t.sql<{ d: string }>(
      "select encode(request_digest, 'hex') as d from workhorse.key_binding where job_id = $1",
      [a.jobId],
    );
    expect(newestA?.rejectedRequestDigest).toBe(binding?.d);
    expect(mine[0]?.keyDigest).toMatch(/^[0-9a-f]{12}$/);

    const onlyA = await listObservations(t.pool, parseObservationFilters({ outcome: "replaced", queue: "rp-a" }));
    expect(onlyA.rows.map((r) => r.jobId)).toEqual([a.jobId, a.jobId]);
    const byDigest = await listObservations(
      t.pool,
      parseObservationFilters({ outcome: "replaced", digest: mine[0]?.keyDigest as string }),
    );
    expect(byDigest.rows.map((r) => r.jobId)).toEqual([b.jobId]);

    // Pages of one: the cursor goes on where the last page ended.
    const first = await listObservations(t.pool, parseObservationFilters({ outcome: "replaced", queue: "rp-a" }), 1);
    expect(first.rows).toHaveLength(1);
    expect(first.next).toMatch(/^\d+_\d+$/);
    const second = await listObservations(
      t.pool,
      parseObservationFilters({ outcome: "replaced", queue: "rp-a", after: first.next as string }),
      1,
    );
    expect(second.rows.map((r) => r.id)).toEqual([olderA?.id]);
    expect(second.next).toBeNull();

    // Other outcomes read the observations, as before (a replaced cursor there is ignored).
    const replays = await listObservations(
      t.pool,
      parseObservationFilters({ outcome: "replayed", after: first.next as string }),
    );
    expect(replays.rows.filter((r) => r.queue === "rp-a").map((r) => r.outcome)).toEqual(["replayed"]);
  });

  test("a page reads a bounded number of events: with a selective filter it stops there and its cursor goes on", async () => {
    const q = t.queue();
    for (let i = 0; i < 3; i++) {
      await q.enqueue("noise", { i }, { queue: "rp-noise", debounce: { key: "noise", windowMs: 600_000 } });
    }
    const r = await replacedListRows(t.pool, { queue: "rp-none-such" }, 10);
    expect(r.rows).toEqual([]);
    expect(r.scannedTo).toBeNull(); // fewer events than the bound: every one read, nothing left to scan
  });

  test("an unfiltered page reads only the events it shows (limit + 1), not a fixed batch; a filtered one stops at maxScanned and says where (Citus's batched reads)", async () => {
    const q = t.queue();
    // Twelve jobs, each replaced once (twelve events on twelve jobs).
    for (let i = 0; i < 24; i++) {
      const key = `bound-${i % 12}`;
      await q.enqueue("bound", { i }, { queue: "rp-bound", debounce: { key, windowMs: 600_000 } });
    }
    const probed: number[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => {
        if (text.includes("from workhorse.job j") && Array.isArray(values?.[0])) probed.push(values[0].length);
        return t.pool.query(text, values);
      },
    } as unknown as typeof t.pool;
    const page = await replacedPageBatched(counting, {}, 3);
    expect(page.rows.length).toBe(4); // limit + 1: the page and its "older" marker
    expect(probed.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(4);

    probed.length = 0;
    const none = await replacedPageBatched(counting, { queue: "rp-none-such" }, 3, 6);
    expect(none.rows).toEqual([]);
    expect(probed.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(6);
    expect(none.scannedTo).not.toBeNull();
    expect(none.scanned).toBe(6);
  });

  test("one node: the page is one statement whose event walk stops at the page (limit + 1) unfiltered and at maxScanned filtered, and says where; Citus: the batched reads", async () => {
    // Events each statement joined to their jobs (the job probes), from EXPLAIN ANALYZE of what
    // the read sent. (The walk below them reads the events in batches of up to 32: an incremental
    // sort by (at, seq) over the `at` index.)
    const eventsRead: number[] = [];
    const sent: { text: string; values: unknown[] }[] = [];
    const capturing = {
      query: (text: string, values: unknown[] = []) => {
        sent.push({ text, values });
        return t.pool.query(text, values);
      },
    } as unknown as typeof t.pool;
    const walked = async () => {
      eventsRead.length = 0;
      for (const s of sent.splice(0)) {
        // Planned as over a large table (a handful of events is cheaper to read whole and sort).
        const client = await t.pool.connect();
        let row: { "QUERY PLAN": unknown } | undefined;
        try {
          await client.query("begin");
          await client.query("set local enable_bitmapscan = off");
          await client.query("set local enable_seqscan = off");
          row = (await client.query(`explain (analyze, format json) ${s.text}`, s.values)).rows[0];
          await client.query("rollback");
        } finally {
          client.release();
        }
        const scans: number[] = [];
        const visit = (node: Record<string, unknown>) => {
          if (node["Relation Name"] === "job") scans.push(node["Actual Loops"] as number);
          for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
        };
        const plan = (row?.["QUERY PLAN"] ?? []) as { Plan: Record<string, unknown> }[];
        visit(plan[0]?.Plan ?? {});
        eventsRead.push(...scans);
      }
      return eventsRead;
    };
    // Pages of a queue's replaced decisions, one after another.
    const pages = async (read: typeof replacedListRows) => {
      const out: string[] = [];
      let after: { us: string; seq: string } | undefined;
      for (let i = 0; i < 10; i++) {
        const r = await read(t.pool, { queue: "rp-bound", ...(after ? { after } : {}) }, 5);
        out.push(...r.rows.slice(0, 5).map((x) => `${x.jobId}/${x.seq}/${x.keyPreview}/${x.keyDigest}`));
        const last = r.rows[4];
        if (r.rows.length <= 5 || !last) break;
        after = { us: last.atUs, seq: last.seq };
      }
      return out;
    };
    if (distributedTests()) {
      // Citus refuses the join: the list reads in batches, with the same pages.
      const viaList = await pages((_db, f, limit) => replacedListRows(capturing, f, limit));
      expect(sent.some((x) => x.text.includes("cross join lateral"))).toBe(false);
      expect(sent.some((x) => x.text.includes("j.id = any($1::uuid[])"))).toBe(true);
      expect(viaList).toHaveLength(12);
      expect(viaList).toEqual(await pages(replacedPageBatched));
      return;
    }
    const page = await replacedPageJoined(capturing, { queue: "rp-bound" }, 3);
    expect(page.rows.map((r) => r.queue)).toEqual(["rp-bound", "rp-bound", "rp-bound", "rp-bound"]);
    expect(await walked()).toEqual([4]); // one statement, four events joined

    const none = await replacedPageJoined(capturing, { queue: "rp-none-such" }, 3, 6);
    expect(none.rows).toEqual([]);
    expect(none.scannedTo).not.toBeNull();
    expect(none.scanned).toBe(6);
    expect(await walked()).toEqual([6]); // the page's six events; then where they stopped (no job read)

    // The same rows as Citus's batched reads, and the list takes this path on one node.
    const joined = await pages(replacedPageJoined);
    expect(joined).toHaveLength(12);
    expect(joined).toEqual(await pages(replacedPageBatched));
    sent.length = 0;
    expect(await pages((_db, f, limit) => replacedListRows(capturing, f, limit))).toEqual(joined);
    expect(sent.some((x) => x.text.includes("cross join lateral"))).toBe(true);
    expect(sent.some((x) => x.text.includes("j.id = any($1::uuid[])"))).toBe(false); // no batched job read
  });

  test("time bounds and the cursor each narrow the events read, through the pool's named statements as by text", async () => {
    const q = t.queue();
    const before = new Date(Date.now() - 1000);
    for (let i = 0; i < 4; i++) {
      await q.enqueue("windowed", { i }, { queue: "rp-window", debounce: { key: "w-1", windowMs: 600_000 } });
    }
    const after = new Date(Date.now() + 60_000);
    const byText = {
      query: (text: string, values?: unknown[]) => t.pool.query(text, values),
    } as unknown as typeof t.pool;
    for (const db of [t.pool, byText]) {
      const ids = async (f: Parameters<typeof replacedListRows>[1], limit = 10) =>
        (await replacedListRows(db, { queue: "rp-window", ...f }, limit)).rows.map((r) => r.seq);
      const all = await ids({});
      expect(all).toHaveLength(3); // three repeats replaced the first request
      expect(await ids({ from: before, to: after })).toEqual(all);
      expect(await ids({ sinceMs: 600_000 })).toEqual(all);
      expect(await ids({ from: after })).toEqual([]);
      expect(await ids({ to: before })).toEqual([]);
      const first = await replacedListRows(db, { queue: "rp-window", from: before }, 1);
      const next = first.rows[1];
      expect(next).toBeDefined();
      const rest = await ids({
        from: before,
        after: { us: first.rows[0]?.atUs as string, seq: first.rows[0]?.seq as string },
      });
      expect(rest).toEqual(all.slice(1));
    }
  });

  test("a replaced decision keeps its key's preview and length after the binding is cleaned up (from the job row)", async () => {
    const q = t.queue();
    for (let i = 0; i < 2; i++) {
      await q.enqueue("gone", { i }, { queue: "rp-gone", debounce: { key: "reindex-customer-42", windowMs: 600_000 } });
    }
    // As maintenance does once the key expires (and the job finished): the binding row is deleted.
    await t.sql(
      "delete from workhorse.key_binding where job_id in (select id from workhorse.job where queue = 'rp-gone')",
    );
    for (const read of [replacedListRows, replacedPageBatched]) {
      const r = await read(t.pool, { queue: "rp-gone" }, 10);
      expect(r.rows).toHaveLength(1);
      expect(r.rows[0]).toMatchObject({ keyLength: "reindex-customer-42".length });
      expect(r.rows[0]?.keyPreview).toMatch(/^rei/);
    }
  });
});
