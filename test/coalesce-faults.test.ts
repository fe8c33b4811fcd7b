// A coalesced statement that PostgreSQL refuses because of the calls sharing it (lib/enqueue/coalesce.ts):
// each call must still get what it would have got alone. The shared statement locks its keys in
// (scope, hash) order, so it can wait on a key that none of its calls alone would have waited for
// while it holds another one: a deadlock (40P01) or a lock timeout (55P03) that a call sent alone
// would never meet. PostgreSQL rolled such a statement back, so each of its calls is sent again
// alone. Everything here waits on real lock states (pg_blocking_pids, citus_lock_waits), never on sleeps.
import { createHmac } from "node:crypto";
import pg from "pg";
import { beforeAll, describe, expect, test } from "vitest";
import {
  type EnqueueOptions,
  type EnqueueResult,
  Queue,
  type QueueOptions,
  WorkhorseDatabaseError,
} from "../lib/enqueue";
import { distributedTests } from "./citus";
import { setupQueueTests, waitFor } from "./helpers";

const t = setupQueueTests();
beforeAll(() => t.ready());

let n = 0;
const fresh = (p: string) => `${p}-${++n}-${Date.now()}`;

/** The backend (on Citus, the global process id) of a test's transaction. */
async function pidOf(c: pg.PoolClient): Promise<string> {
  const sql = distributedTests() ? "select citus_backend_gpid()::text as pid" : "select pg_backend_pid()::text as pid";
  return (await c.query<{ pid: string }>(sql)).rows[0]?.pid as string;
}

/** Resolves once a statement waits on a lock that transaction `pid` holds (on Citus, cluster-wide). */
function waitForBlockedBy(what: string, pid: string) {
  return waitFor(what, async () => {
    const [row] = await t.sql<{ n: string }>(
      distributedTests()
        ? "select count(*) as n from citus_lock_waits where blocking_gpid = $1::bigint"
        : "select count(*) as n from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))",
      [pid],
    );
    return Number(row?.n) > 0;
  });
}

/**
 * Where a shared statement takes the key's lock, in its order: on one node by (scope, key hash); on
 * Citus by the shard of the key's bucket first (sql/functions/citus/enqueue_batch.sql). The key hash
 * is computed here with the installation secret, as the Queue computes it.
 */
async function lockPlace(scope: string, key: string): Promise<string> {
  const [row] = await t.sql<{ key_secret: Buffer }>("select key_secret from workhorse.installation");
  const hash = createHmac("sha256", row?.key_secret as Buffer)
    .update(scope, "utf8")
    .update(Buffer.of(0x1f))
    .update(key, "utf8")
    .digest();
  if (!distributedTests()) return hash.toString("hex");
  const [shard] = await t.sql<{ s: string }>(
    "select lpad(get_shard_id_for_distribution_column('workhorse.job', workhorse.key_bucket($1, $2))::text, 20, '0') as s",
    [scope, hash],
  );
  return `${shard?.s}:${hash.toString("hex")}`;
}

/** Keys X and Y in one scope that a statement carrying both locks Y first, then X. */
async function orderedKeys(queue: Queue, scope: string): Promise<{ x: string; y: string }> {
  await queue.describeKey({ key: "key-a", scope }); // the installation key exists
  const [a, b] = ["key-a", "key-b"];
  const [pa, pb] = await Promise.all([lockPlace(scope, a), lockPlace(scope, b)]);
  return pa < pb ? { y: a, x: b } : { y: b, x: a };
}

interface Outcome {
  outcome?: string;
  jobId?: string;
  error?: string;
  sqlState?: string;
}

function settledAs(s: PromiseSettledResult<EnqueueResult>): Outcome {
  if (s.status === "fulfilled") return { outcome: s.value.outcome, jobId: s.value.jobId };
  const e = s.reason as Error;
  return { error: e.name, ...(e instanceof WorkhorseDatabaseError ? { sqlState: e.sqlState } : {}) };
}

async function begin(): Promise<pg.PoolClient> {
  const c = await t.pool.connect();
  await c.query("begin");
  return c;
}

/** Ends a test's transaction (rolled back if still open) and gives its client back. */
async function end(c: pg.PoolClient): Promise<void> {
  await c.query("rollback").catch(() => {});
  c.release();
}

/** What `sharedStatementOnXAndY` set up: T still open and holding X, the calls on their way. */
interface Staged {
  shared: Queue;
  /** T's client (T holds X, uncommitted). */
  tx: pg.PoolClient;
  opts: (key: string) => EnqueueOptions;
  x: string;
  y: string;
  /** The jobs T2 and T made for Z and X. */
  zJob: string;
  xJob: string;
  /** The call on Z (alone), then the calls on Y, X and the keyless call (one shared statement). */
  zCall: Promise<EnqueueResult>;
  settling: Promise<PromiseSettledResult<EnqueueResult>[]>;
  before: ReturnType<Queue["coalesceStats"]>;
}

/**
 * The scenario, up to the shared statement: on a Queue over `poolOptions` with one statement
 * in flight, transaction T2 holds key Z and transaction T holds key X; a call on Z takes the slot and
 * waits for T2; calls on Y and X (hash(Y) < hash(X)) and a keyless call wait for the slot. Then T2
 * commits: the three go as one statement, which locks Y and waits on X. `test` goes on from there
 * (T is still open); the pool, queue and transactions are closed after it.
 */
async function sharedStatementOnXAndY(
  name: string,
  poolOptions: string,
  queueOptions: Partial<QueueOptions>,
  test: (s: Staged) => Promise<void>,
): Promise<void> {
  const pool = new pg.Pool({ connectionString: t.url, max: 4, options: poolOptions });
  const shared = new Queue({ pool, maintenance: false, coalesce: { maxStatements: 1 }, ...queueOptions });
  const scope = fresh(name);
  const { x, y } = await orderedKeys(shared, scope);
  const opts = (key: string): EnqueueOptions => ({ queue: "faults", idempotency: { key, scope } });
  const t2 = await begin();
  const tx = await begin();
  try {
    const zJob = await shared.withClient(t2).enqueue("order.place", { k: "z" }, opts("z"));
    const xJob = await shared.withClient(tx).enqueue("order.place", { k: "x" }, opts(x));
    const before = shared.coalesceStats();
    const zCall = shared.enqueueWithResult("order.place", { k: "z" }, opts("z"));
    await waitForBlockedBy("the call on Z to wait for T2", await pidOf(t2));
    const settling = Promise.allSettled([
      zCall,
      shared.enqueueWithResult("order.place", { k: "y" }, opts(y)),
      shared.enqueueWithResult("order.place", { k: "x" }, opts(x)),
      shared.enqueueWithResult("order.place", { k: "keyless" }, { queue: "faults" }),
    ]);
    await waitFor(
      "the three calls to wait for the slot",
      async () => shared.coalesceStats().calls === before.calls + 4,
    );
    await t2.query("commit");
    await test({ shared, tx, opts, x, y, zJob, xJob, zCall, settling, before });
    // It really was one shared statement, and it failed: Z alone, the shared one, then each of its three alone.
    expect(shared.coalesceStats().sharedStatements - before.sharedStatements).toBe(1);
    expect(shared.coalesceStats().statements - before.statements).toBe(5);
    await tx.query("commit");
    expect(await t.count("job", `key_scope = '${scope}'`)).toBe(3);
  } finally {
    await end(t2);
    await end(tx);
    await shared.close();
    await pool.end();
  }
}

describe("a shared statement refused because of its neighbours", () => {
  test.each([
    { name: "retry on", retry: {} },
    { name: "retry off", retry: { retry: false as const } },
  ])(
    "a deadlock of the shared statement: every call gets what it would alone, keyless ones too ($name)",
    async ({ retry }) => {
      // Of two waiters in a cycle, the one whose deadlock check runs first ends it: the shared
      // statement's sessions check after 2 s, T's after 20 s, so T need only start waiting within 2 s
      // of the shared statement, and a loaded machine cannot make T check first.
      await sharedStatementOnXAndY("deadlock", "-c deadlock_timeout=2000", retry, async (s) => {
        await s.tx.query("set local deadlock_timeout = '20s'");
        // Once the call on Z is answered, the only statement of this queue is the shared one.
        await s.zCall;
        await waitForBlockedBy("the shared statement to wait on X, held by T", await pidOf(s.tx));
        // T asks for Y: T waits on the statement, the statement on T. PostgreSQL ends the statement.
        const yJob = await s.shared.withClient(s.tx).enqueue("order.place", { k: "y" }, s.opts(s.y));
        await s.tx.query("commit");
        const settled = (await s.settling).map(settledAs);
        // Y alone races T for the key Y once the shared statement is gone: whichever binds it first,
        // both name one job (a replay of T's, or accepted and T's call replays it).
        expect(["replayed", "accepted"]).toContain(settled[1]?.outcome);
        expect(settled).toEqual([
          { outcome: "replayed", jobId: s.zJob },
          { outcome: settled[1]?.outcome, jobId: yJob },
          { outcome: "replayed", jobId: s.xJob },
          { outcome: "accepted", jobId: expect.any(String) },
        ]);
        const keyless = (settled[3] as { jobId: string }).jobId;
        expect(await t.count("job", `id = '${keyless}' and payload->>'k' = 'keyless'`)).toBe(1);
      });
    },
  );

  test("a lock timeout of the shared statement: the calls that would not have waited alone succeed, the one that would gets its timeout", async () => {
    // The producer's sessions give up a lock wait after 1.5 s (lock_timeout, 55P03): the shared
    // statement on X, then the call on X alone. On Citus the waits happen on the workers, where a
    // coordinator session's lock_timeout does not reach; its statement_timeout (57014) does.
    const timeout = distributedTests()
      ? { option: "-c statement_timeout=1500", sqlState: "57014" }
      : { option: "-c lock_timeout=1500", sqlState: "55P03" };
    await sharedStatementOnXAndY("lock-timeout", timeout.option, { retry: false }, async (s) => {
      const settled = (await s.settling).map(settledAs);
      expect(settled).toEqual([
        { outcome: "replayed", jobId: s.zJob },
        { outcome: "accepted", jobId: expect.any(String) },
        { error: "WorkhorseDatabaseError", sqlState: timeout.sqlState },
        { outcome: "accepted", jobId: expect.any(String) },
      ]);
    });
  });
});

// The session goes on after any error PostgreSQL sends at severity ERROR, whatever its SQLSTATE: a
// class 08 or 57P01 code raised by the server (here by a trigger, for one request) is still a
// refusal of the shared statement, not a lost reply, so its neighbours go again alone. (Citus: the
// trigger would have to be distributed; the decision is the client's and the same on both layouts.)
describe.runIf(!distributedTests())("a shared statement refused with a connection-class SQLSTATE", () => {
  test.each(["08006", "57P01"])(
    "SQLSTATE %s at severity ERROR: every neighbour gets what it would alone",
    async (sqlState) => {
      await t.sql(`create or replace function public.refuse_boom() returns trigger language plpgsql as $$
        begin
          if new.payload ? 'boom' then raise exception 'boom' using errcode = new.payload ->> 'boom'; end if;
          return new;
        end $$`);
      await t.sql(
        "create or replace trigger refuse_boom before insert on workhorse.job for each row execute function public.refuse_boom()",
      );
      try {
        const scope = fresh("conn-class");
        const run = async (coalesce: QueueOptions["coalesce"]) => {
          const q = new Queue({ pool: t.pool, maintenance: false, coalesce });
          const tag = `${coalesce === false ? "alone" : "shared"}-${scope}`;
          // The first call takes the only statement slot; the next five wait and share one statement.
          const first = q.enqueueWithResult("t", { first: tag }, {});
          const calls = [
            q.enqueueWithResult("t", { g: 1 }, { idempotency: { key: `${tag}-g1`, scope } }),
            q.enqueueWithResult("t", { boom: sqlState }, { idempotency: { key: `${tag}-b`, scope } }),
            q.enqueueWithResult("t", { keyless: tag }, {}),
            q.enqueueWithResult("t", { boom: sqlState, keyless: tag }, {}),
            q.enqueueWithResult("t", { g: 2 }, { idempotency: { key: `${tag}-g2`, scope } }),
          ];
          const settled = (await Promise.allSettled([first, ...calls])).map(settledAs);
          const stats = q.coalesceStats();
          await q.close();
          return { settled, stats };
        };
        const alone = await run(false);
        const shared = await run({ maxStatements: 1 });
        expect(shared.stats.sharedStatements).toBeGreaterThan(0);
        const shape = (o: Outcome) => o.outcome ?? o;
        expect(shared.settled.map(shape)).toEqual(alone.settled.map(shape));
        expect(alone.settled.map(shape)).toEqual([
          "accepted",
          "accepted",
          { error: "WorkhorseDatabaseError", sqlState },
          "accepted",
          { error: "WorkhorseDatabaseError", sqlState },
          "accepted",
        ]);
        expect(await t.count("job", `payload ->> 'keyless' = 'shared-${scope}'`)).toBe(1);
      } finally {
        await t.sql("drop trigger if exists refuse_boom on workhorse.job");
      }
    },
  );
});
