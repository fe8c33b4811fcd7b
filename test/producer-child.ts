// A producer process for test/producer-faults.test.ts, written as the README tells an application
// to: its own pool with an 'error' listener, try/catch around every enqueue. The test kills its
// backends and restarts PostgreSQL under it; the process must live and every keyed call must end
// with one answer. Not a test file itself.
//   node --import tsx test/producer-child.ts <database url> <producers> <keys> <keyed|keyless>
import pg from "pg";
import { Queue, WorkhorseDatabaseError } from "../lib/enqueue";

const [url, producersArg, keysArg, mode] = process.argv.slice(2);
if (!url || !producersArg || !keysArg || (mode !== "keyed" && mode !== "keyless")) {
  throw new Error("usage: producer-child.ts <database url> <producers> <keys> <keyed|keyless>");
}
const producers = Number(producersArg);
const keys = Number(keysArg);
const pool = new pg.Pool({ connectionString: url, max: producers, connectionTimeoutMillis: 5000 });
pool.on("error", () => {}); // an idle connection died; the pool replaces it
const queue = new Queue({ pool, maintenance: false });

/** key -> every job id answered for it (a Set: one element when nothing was duplicated). */
const answers = new Map<number, Set<string>>();
const outcomes: Record<string, number> = {};
const failures: Array<{ name: string; retryable: boolean | null; message: string }> = [];
let calls = 0;

function shuffled(n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j] as number, a[i] as number];
  }
  return a;
}

process.stdout.write("ready\n");
await Promise.all(
  Array.from({ length: producers }, async () => {
    for (const k of shuffled(keys)) {
      calls++;
      try {
        const options =
          mode === "keyed"
            ? { queue: "faults", idempotency: { key: `order:${k}`, scope: "faults" } }
            : { queue: "faults" };
        const r = await queue.enqueueWithResult("order.place", { k }, options);
        outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
        const set = answers.get(k) ?? new Set<string>();
        set.add(r.jobId);
        answers.set(k, set);
      } catch (err) {
        failures.push({
          name: (err as Error).name,
          retryable: err instanceof WorkhorseDatabaseError ? err.retryable : null,
          message: (err as Error).message,
        });
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }),
);
await queue.close();
await pool.end();
process.stdout.write(
  `${JSON.stringify({
    calls,
    outcomes,
    failures,
    retry: queue.retryStats(),
    answers: Object.fromEntries([...answers].map(([k, ids]) => [k, [...ids]])),
  })}\n`,
);
