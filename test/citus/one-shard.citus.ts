// Runs only on a Citus coordinator (WORKHORSE_DISTRIBUTED=1; vitest.config.ts includes *.citus.ts
// then): a keyed decision is one round trip from the client and one command on one worker.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { EnqueueIdempotencyConflictError, Queue } from "../../lib/enqueue";
import { setupQueueTests } from "../helpers";

const t = setupQueueTests();
let pool: pg.Pool;
let q: Queue;
const remote: Array<{ command: string; server: string }> = [];

beforeAll(async () => {
  await t.ready();
  // citus.log_remote_commands: the coordinator reports every command it sends to a worker as a notice.
  pool = new pg.Pool({ connectionString: t.url, max: 1, options: "-c citus.log_remote_commands=on" });
  pool.on("connect", (c) => {
    c.on("notice", (n) => {
      if (n.message?.startsWith("issuing ")) remote.push({ command: n.message, server: n.detail ?? "" });
    });
  });
  // No wake-ups: a NOTIFY after an accept is a separate, coalesced statement (workers poll as well).
  q = new Queue({ pool, maintenance: false, notify: false });
  // Reads the layout and the installation key once, opens the connection.
  await q.enqueue("warm-up", {}, { idempotency: { key: "warm-up" } });
});

afterAll(async () => {
  await q.close();
  await pool.end();
});

/** host:port of the worker holding the shard of this job id's bucket. */
async function nodeOf(jobId: string): Promise<string> {
  const [row] = await t.sql<{ node: string }>(
    `select s.nodename || ':' || s.nodeport as node
       from citus_shards s
      where s.shardid = get_shard_id_for_distribution_column('workhorse.job', workhorse.id_bucket($1::uuid))`,
    [jobId],
  );
  return row!.node;
}

/** Shards of a table (by index) that hold rows, with their counts. */
async function shardsWithRows(table: string): Promise<string[]> {
  const rows = await t.sql<{ shardid: string; result: string }>(
    "select shardid::text, result from run_command_on_shards($1, 'select count(*) from %s') where result::int > 0",
    [table],
  );
  return rows.map((r) => `${r.shardid}:${r.result}`);
}

describe("a keyed decision stays on one shard", () => {
  test("an accept is one round trip from the client and one delegated call on the key's worker", async () => {
    const query = vi.spyOn(pg.Client.prototype, "query");
    remote.length = 0;
    const r = await q.enqueueWithResult("email", { to: "a@example.com" }, { idempotency: { key: "order-1" } });
    const calls = query.mock.calls.length;
    query.mockRestore();

    expect(r.outcome).toBe("accepted");
    expect(calls).toBe(1);
    // The coordinator forwarded the whole call: one command, the decision function, on one worker.
    expect(remote).toHaveLength(1);
    expect(remote[0]!.command).toMatch(/^issuing SELECT .* FROM workhorse\.enqueue_one_at\(/);
    expect(remote[0]!.server).toContain(await nodeOf(r.jobId));
  });

  test("the job and its binding sit in colocated shards: one row each, in the same bucket", async () => {
    const r = await q.enqueueWithResult("email", { to: "b@example.com" }, { idempotency: { key: "order-2" } });
    const [row] = await t.sql<{ job: number; binding: number }>(
      `select j.bucket as job, b.bucket as binding
         from workhorse.job j
         join workhorse.key_binding b on b.bucket = j.bucket and b.job_id = j.id
        where j.bucket = workhorse.id_bucket($1::uuid) and j.id = $1::uuid`,
      [r.jobId],
    );
    expect(row!.job).toBe(row!.binding);
    // One colocation group: a bucket's job shard and binding shard are on the same worker.
    const [group] = await t.sql<{ n: string }>(
      `select count(distinct colocationid) as n from pg_dist_partition
        where logicalrelid in ('workhorse.job'::regclass, 'workhorse.key_binding'::regclass)`,
    );
    expect(Number(group!.n)).toBe(1);
  });

  test("a replay and a conflict are one delegated call each, on the same worker as the accept", async () => {
    const first = await q.enqueue("email", { to: "c@example.com" }, { idempotency: { key: "order-3" } });
    const node = await nodeOf(first);
    remote.length = 0;
    const replay = await q.enqueueWithResult("email", { to: "c@example.com" }, { idempotency: { key: "order-3" } });
    expect(replay).toMatchObject({ jobId: first, outcome: "replayed" });
    expect(remote).toHaveLength(1);
    expect(remote[0]!.server).toContain(node);

    remote.length = 0;
    const err = await q
      .enqueue("email", { to: "other@example.com" }, { idempotency: { key: "order-3" } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(first);
    expect(remote.filter((c) => c.command.includes("enqueue_one_at"))).toHaveLength(1);
    expect(remote[0]!.server).toContain(node);
  });

  test("unkeyed jobs spread over the shards; a batch over many shards is all or nothing", async () => {
    const before = (await shardsWithRows("workhorse.job")).length;
    await q.enqueueMany(Array.from({ length: 64 }, (_, i) => ({ type: "spread", payload: { i } })));
    expect((await shardsWithRows("workhorse.job")).length).toBeGreaterThan(Math.max(before, 4));

    const existing = await q.enqueue("t", { v: 1 }, { idempotency: { key: "held" } });
    const jobs = await t.count("job");
    const err = await q
      .enqueueMany([
        ...Array.from({ length: 20 }, (_, i) => ({
          type: "t",
          payload: {},
          options: { idempotency: { key: `fresh-${i}` } },
        })),
        { type: "t", payload: { v: 2 }, options: { idempotency: { key: "held" } } },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(EnqueueIdempotencyConflictError);
    expect((err as EnqueueIdempotencyConflictError).ordinal).toBe(21);
    expect((err as EnqueueIdempotencyConflictError).existingJobId).toBe(existing);
    expect(await t.count("job")).toBe(jobs);
    expect(await t.count("key_binding", "key_preview like 'fres%'")).toBe(0);
  });
});
