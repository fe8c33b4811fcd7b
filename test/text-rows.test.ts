/**
 * The enqueue statements' lean wire form (lib/store/text-rows.ts): rows read as text with no
 * Describe, through every kind of client the core runs on, and every way a statement can end
 * (rows, PostgreSQL's error, the driver's read timeout, a prepared name reused for another text).
 */
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { EnqueueIdempotencyConflictError } from "../lib/enqueue";
import { runOn, type TextFields, TextRowsStatement } from "../lib/store/text-rows";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

const asText = (f: TextFields) => f.map((v) => (v === null ? null : String(v)));

async function withClient<T>(config: pg.ClientConfig, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: t.url, ...config });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe("a text-rows statement", () => {
  it("answers each row's fields as text, a named statement parsed once per connection", async () => {
    await withClient({}, async (client) => {
      const text = "select g, g * 2 as twice, null::text as nothing from generate_series(1, $1::int) g";
      for (const n of [3, 2]) {
        const { rows } = await runOn(client, new TextRowsStatement("text_rows_series", text, [n], asText));
        expect(rows).toEqual(Array.from({ length: n }, (_, i) => [String(i + 1), String(2 * (i + 1)), null]));
      }
      const prepared = await client.query("select count(*)::int as n from pg_prepared_statements where name = $1", [
        "text_rows_series",
      ]);
      expect(prepared.rows[0]?.n).toBe(1);
    });
  });

  it("rejects with PostgreSQL's error (its SQLSTATE) and leaves the connection usable", async () => {
    await withClient({}, async (client) => {
      const err = await runOn(client, new TextRowsStatement("", "select 1 / $1::int", [0], asText)).catch((e) => e);
      expect(err).toBeInstanceOf(pg.DatabaseError);
      expect((err as pg.DatabaseError).code).toBe("22012");
      const { rows } = await runOn(client, new TextRowsStatement("", "select $1::text", ["after"], asText));
      expect(rows).toEqual([["after"]]);
    });
  });

  it("refuses a prepared name already used for another text on the connection, which stays usable", async () => {
    await withClient({}, async (client) => {
      await runOn(client, new TextRowsStatement("text_rows_once", "select 1", [], asText));
      const err = await runOn(client, new TextRowsStatement("text_rows_once", "select 2", [], asText)).catch((e) => e);
      expect(String(err)).toContain("text_rows_once was used for a different text");
      expect((await client.query("select 3 as n")).rows[0]?.n).toBe(3);
    });
  });

  it("ends with the driver's read timeout (query_timeout) instead of waiting for ever", async () => {
    await withClient({ query_timeout: 200 }, async (client) => {
      const started = performance.now();
      const err = await runOn(client, new TextRowsStatement("", "select pg_sleep(1.5)", [], asText)).catch((e) => e);
      expect(String(err)).toContain("Query read timeout");
      expect(performance.now() - started).toBeLessThan(1200);
    });
  });

  it("a mapping that throws fails the statement with its error, after the exchange ended", async () => {
    await withClient({}, async (client) => {
      const bad = (): never => {
        throw new Error("unmappable row");
      };
      const err = await runOn(client, new TextRowsStatement("", "select 1", [], bad)).catch((e) => e);
      expect(String(err)).toContain("unmappable row");
      expect((await client.query("select 4 as n")).rows[0]?.n).toBe(4);
    });
  });
});

describe("enqueue on a client in pipeline mode (which refuses submittables)", () => {
  it("sends the same statements as ordinary queries: accepted, replayed, a batch, a conflict", async () => {
    const q = t.queue();
    await withClient({ pipeline: true } as pg.ClientConfig, async (client) => {
      const view = q.withClient(client);
      const options = { queue: "pipeline", idempotency: { key: "pipeline-1", scope: "text-rows" } };
      const first = await view.enqueueWithResult("t", { n: 1 }, options);
      const again = await view.enqueueWithResult("t", { n: 1 }, options);
      expect(first.outcome).toBe("accepted");
      expect(again).toMatchObject({ outcome: "replayed", jobId: first.jobId });
      const batch = await view.enqueueManyWithResults([
        { type: "t", payload: { n: 1 }, options },
        {
          type: "t",
          payload: { n: 2 },
          options: { ...options, idempotency: { key: "pipeline-2", scope: "text-rows" } },
        },
      ]);
      expect(batch.map((r) => r.outcome)).toEqual(["replayed", "accepted"]);
      const conflict = await view.enqueue("t", { n: 9 }, options).catch((e) => e);
      expect(conflict).toBeInstanceOf(EnqueueIdempotencyConflictError);
    });
  });
});
