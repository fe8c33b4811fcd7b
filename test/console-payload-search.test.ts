// Search by payload field (lib/console/reads/payload-search.ts) against real PostgreSQL, seeded through
// the core: bounded in time (the UUIDv7 key range of the window) and rows (the newest N jobs).
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { parseSearch, searchPayload, matchOf, SEARCH_SCAN_CAP } = await import("@/lib/console/reads/payload-search");
const { payloadSearchRows } = await import("@/lib/store/console/search");
const { uuidv7Floor } = await import("@/lib/console/reads/read-queries");

const t = setupQueueTests();
beforeAll(() => t.ready());

describe("search jobs by a payload field", () => {
  test("finds the jobs whose payload holds the value at the path, newest first, by type too; text and numbers both match", async () => {
    const q = t.queue();
    const a = await q.enqueue("order.place", { orderId: "ORD-123", total: 5 }, { queue: "ps" });
    await q.enqueue("order.place", { orderId: "ORD-124" }, { queue: "ps" });
    const b = await q.enqueue(
      "order.refund",
      { orderId: "ORD-123", customer: { email: "x@example.com" } },
      { queue: "ps" },
    );
    const c = await q.enqueue("invoice.send", { order: { id: 77 } }, { queue: "ps" });

    const run = async (params: Record<string, string>) => {
      const p = parseSearch(params);
      if (!p?.ok) throw new Error(`not parsed: ${JSON.stringify(p)}`);
      return searchPayload(t.pool, p.query);
    };
    expect((await run({ path: "orderId", value: "ORD-123" })).jobs.map((j) => j.id)).toEqual([b, a]);
    expect((await run({ path: "orderId", value: "ORD-123", type: "order.place" })).jobs.map((j) => j.id)).toEqual([a]);
    expect((await run({ path: "customer.email", value: "x@example.com" })).jobs.map((j) => j.id)).toEqual([b]);
    expect((await run({ path: "order.id", value: "77" })).jobs.map((j) => j.id)).toEqual([c]);
    expect((await run({ path: "orderId", value: "ORD-999" })).jobs).toEqual([]);
    const found = await run({ path: "orderId", value: "ORD-123", window: "1h" });
    expect(found.jobs[0]).toMatchObject({ id: b, type: "order.refund", queue: "ps", state: "ready" });
    expect(found.scanned).toBe(await t.count("job"));
    expect(found.scanCap).toBe(SEARCH_SCAN_CAP);
  });

  test("looks inside arrays on the way and at the end: items.sku finds an order line, tags finds a tag", async () => {
    const q = t.queue();
    const order = await q.enqueue(
      "order.place",
      {
        items: [
          { sku: "SKU-BLUE-S", qty: 1 },
          { sku: "SKU-RED-M", qty: 2 },
        ],
        tags: ["gift", "rush"],
      },
      { queue: "ps-arr" },
    );
    const nested = await q.enqueue("order.ship", { parcels: [{ lines: [{ sku: "SKU-RED-M" }] }] }, { queue: "ps-arr" });
    await q.enqueue("order.place", { items: [{ sku: "SKU-RED-L" }], tags: "rushed" }, { queue: "ps-arr" });
    const run = async (params: Record<string, string>) => {
      const p = parseSearch(params);
      if (!p?.ok) throw new Error(`not parsed: ${JSON.stringify(p)}`);
      return (await searchPayload(t.pool, p.query)).jobs.map((j) => j.id);
    };
    expect(await run({ path: "items.sku", value: "SKU-RED-M" })).toEqual([order]);
    expect(await run({ path: "parcels.lines.sku", value: "SKU-RED-M" })).toEqual([nested]);
    expect(await run({ path: "items.qty", value: "2" })).toEqual([order]);
    expect(await run({ path: "tags", value: "rush" })).toEqual([order]);
    expect(await run({ path: "items.sku", value: "SKU-RED" })).toEqual([]);
  });

  test("bounded: only jobs created inside the window and only the newest scanCap of them are looked at", async () => {
    const q = t.queue();
    const old = await q.enqueue("order.place", { orderId: "ORD-OLD" }, { queue: "ps2" });
    const newer: string[] = [];
    for (let i = 0; i < 5; i++) newer.push(await q.enqueue("order.place", { orderId: "ORD-NEW", i }, { queue: "ps2" }));
    const match = matchOf(["orderId"], "ORD-NEW");
    // A window that starts after the old job's id: it is never read.
    const fromId = uuidv7Floor(Date.now() + 60_000);
    expect(await payloadSearchRows(t.pool, { match, fromId, limit: 50, scanCap: 100 })).toMatchObject({
      jobs: [],
      scanned: 0,
    });
    const capped = await payloadSearchRows(t.pool, { match, fromId: uuidv7Floor(0), limit: 50, scanCap: 3 });
    expect(capped.scanned).toBe(3);
    expect(capped.jobs.map((j) => j.id)).toEqual(newer.slice(-3).reverse());
    const limited = await payloadSearchRows(t.pool, { match, fromId: uuidv7Floor(0), limit: 2, scanCap: 1000 });
    expect(limited.jobs.map((j) => j.id)).toEqual(newer.slice(-2).reverse());
    expect(
      (
        await payloadSearchRows(t.pool, {
          match: matchOf(["orderId"], "ORD-OLD"),
          fromId: uuidv7Floor(0),
          limit: 5,
          scanCap: 1000,
        })
      ).jobs.map((j) => j.id),
    ).toEqual([old]);
  });

  test("a search that reached its bound says where it stopped, and the next one goes on from there to older jobs", async () => {
    const q = t.queue();
    const more: string[] = [];
    for (let i = 0; i < 5; i++) more.push(await q.enqueue("order.place", { orderId: "ORD-MORE", i }, { queue: "ps3" }));
    const match = matchOf(["orderId"], "ORD-MORE");
    const first = await payloadSearchRows(t.pool, { match, fromId: uuidv7Floor(0), limit: 50, scanCap: 3 });
    expect(first.jobs.map((j) => j.id)).toEqual(more.slice(2).reverse());
    expect(first.oldestScanned).toBe(more[2]);
    const next = await payloadSearchRows(t.pool, {
      match,
      fromId: uuidv7Floor(0),
      beforeId: first.oldestScanned as string,
      limit: 50,
      scanCap: 3,
    });
    expect(next.jobs.map((j) => j.id)).toEqual([more[1], more[0]]);

    const parsed = parseSearch({ path: "orderId", value: "ORD-MORE", before: more[2] as string });
    expect(parsed).toMatchObject({ ok: true, query: { before: more[2] } });
    const garbage = parseSearch({ path: "orderId", value: "ORD-MORE", before: "x'; --" });
    expect(garbage?.ok && garbage.query.before).toBeUndefined(); // not an id: searched from the newest
    if (!parsed?.ok) throw new Error("not parsed");
    const page = await searchPayload(t.pool, parsed.query);
    expect(page.jobs.map((j) => j.id)).toEqual([more[1], more[0]]);
    expect(page.before).toBe(more[2]);
  });

  test("the form: a path of plain segments and a value are required; the window defaults to a day, an invalid one is named, a path of more than 8 segments says so", () => {
    expect(parseSearch({})).toBeNull();
    expect(parseSearch({ path: "orderId", value: "ORD-1" })).toEqual({
      ok: true,
      query: { path: ["orderId"], value: "ORD-1", window: "24h" },
    });
    expect(parseSearch({ path: "a.b", value: " 7 ", type: "t", window: "7d" })).toEqual({
      ok: true,
      query: { path: ["a", "b"], value: "7", type: "t", window: "7d" },
    });
    expect(parseSearch({ path: "a..b", value: "x" })).toMatchObject({
      ok: false,
      errors: { path: expect.any(String) },
    });
    expect(parseSearch({ path: "a'); drop", value: "x" })).toMatchObject({ ok: false });
    expect(parseSearch({ path: "orderId", value: "" })).toMatchObject({
      ok: false,
      errors: { value: expect.any(String) },
    });
    expect(parseSearch({ path: "orderId", value: "ORD-1", window: "garbage" })).toEqual({
      ok: false,
      errors: { window: "“garbage” is not a valid window: choose 1h, 24h or 7d" },
    });
    expect(parseSearch({ window: "garbage" })).toMatchObject({ ok: false, errors: { window: expect.any(String) } });
    expect(parseSearch({ path: "a.b.c.d.e.f.g.h.i", value: "x" })).toMatchObject({
      ok: false,
      errors: { path: "The path has 9 segments; at most 8 are allowed (e.g. customer.address.city)" },
    });
    expect(parseSearch({ path: "a.b.c.d.e.f.g.h", value: "x" })).toMatchObject({ ok: true });
    expect(matchOf(["a", "b"], "12")).toEqual({
      jsonpath: '$."a"."b" ? (@ == $v0 || @ == $v1)',
      vars: { v0: "12", v1: 12 },
    });
    expect(matchOf(["f"], "true")).toEqual({
      jsonpath: '$."f" ? (@ == $v0 || @ == $v1)',
      vars: { v0: "true", v1: true },
    });
    expect(matchOf(["$x", "a-b"], 'say "hi" \\ $v1')).toEqual({
      jsonpath: '$."$x"."a-b" ? (@ == $v0)',
      vars: { v0: 'say "hi" \\ $v1' },
    });
  });

  test("a path with an empty segment (two dots in a row, a dot at the start or end) says so, whatever its length", () => {
    const empty = "The path has an empty segment (two dots in a row, or a dot at the start or end)";
    for (const path of ["a.b.c.d.e.f.g.h.", "a..b", ".a", "a.", "a.b.c.d.e.f.g.h.i."]) {
      expect(parseSearch({ path, value: "1" }), path).toEqual({ ok: false, errors: { path: empty } });
    }
    expect(parseSearch({ path: "", value: "1" })).toEqual({
      ok: false,
      errors: { path: "A field name or dot path, like orderId or customer.email (letters, digits, _ - $)" },
    });
  });
});
