// The raw key is never stored: after every path that touches a key, no table of the schema (nor the
// observation log) holds any of the raw keys used.
import { beforeAll, expect, test } from "vitest";
import { EnqueueIdempotencyConflictError } from "../lib/enqueue";
import { setupQueueTests } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

test("no raw key appears anywhere in the database", async () => {
  const q = t.queue({ source: "privacy-test" });
  const keys = {
    single: "SECRET-single-7f3a9c1e-card-4242424242424242",
    batch: "SECRET-batch-0b8d2e44-iban-DE89370400440532013000",
    tx: "SECRET-tx-5c6d7e8f-email-jane.doe@example.com",
    conflict: "SECRET-conflict-91a2b3c4-ssn-078-05-1120",
    purged: "SECRET-purged-aa11bb22-order-998877",
    expired: "SECRET-expired-cc33dd44-token-abcdef",
  };
  const scope = "privacy";
  await q.enqueue("t", { n: 1 }, { idempotency: { key: keys.single, scope } });
  await q.enqueue("t", { n: 1 }, { idempotency: { key: keys.single, scope } }); // replay -> observation
  await q.enqueueMany([
    { type: "t", payload: {}, options: { idempotency: { key: keys.batch, scope } } },
    { type: "t", payload: {}, options: { idempotency: { key: keys.batch, scope } } },
  ]);
  const client = await t.pool.connect();
  await client.query("begin");
  await q.withClient(client).enqueue("t", {}, { idempotency: { key: keys.tx, scope } });
  await client.query("commit");
  client.release();
  await q.enqueue("t", { v: 1 }, { idempotency: { key: keys.conflict, scope } });
  const err = await q.enqueue("t", { v: 2 }, { idempotency: { key: keys.conflict, scope } }).catch((e) => e);
  expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
  expect(`${err.message} ${JSON.stringify(err.toJSON())} ${err.stack}`).not.toContain(keys.conflict);
  const purged = await q.enqueue("t", {}, { idempotency: { key: keys.purged, scope } });
  await q.purge({ jobId: purged }, { actor: "ops", reason: "privacy test" });
  await q.enqueue("t", {}, { idempotency: { key: keys.expired, scope, ttlMs: 1 } });
  await new Promise((r) => setTimeout(r, 5));
  await q.findBinding({ key: keys.expired, scope });
  await q.runMaintenance();
  await q.close();
  expect(q.observationStats().written).toBeGreaterThanOrEqual(3);

  const tables = await t.sql<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = 'workhorse' order by 1",
  );
  expect(tables.map((r) => r.table_name)).toEqual(
    expect.arrayContaining(["enqueue_observation", "idempotency_binding", "job", "job_event", "operator_audit"]),
  );
  let dump = "";
  for (const { table_name } of tables) {
    const rows = await t.sql<{ row: string }>(`select x::text as row from workhorse.${table_name} x`);
    dump += rows.map((r) => r.row).join("\n");
  }
  expect(dump.length).toBeGreaterThan(1000);
  for (const key of Object.values(keys)) {
    expect(dump).not.toContain(key);
    // Nor its tail: previews show at most 8 leading characters.
    expect(dump).not.toContain(key.slice(8));
  }
  // The keys' previews are there (what operators see), so the dump did read the right rows.
  expect(dump).toContain("SECRET-s…");
});
