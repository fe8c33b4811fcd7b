// A TypeScript worker for the cross-language tests, run as its own process so a test can kill it:
//   npx tsx sdk/python/tests/ts/worker.ts <queue>
// Handles "xlang.capture": a "charge" stage through ctx.checkpoint, then (first run) prints
// "checkpointed" and hangs as if the next call never returned; a later attempt finds the stored
// stage and completes with it. Prints "started" once it claims.
import pg from "pg";
import { type HandlerContext, Worker } from "../../../../lib/enqueue";

const queue = process.argv[2] ?? "xlang";
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
let runs = 0;
const worker = new Worker({
  pool,
  queues: [queue],
  leaseMs: 1500,
  heartbeatIntervalMs: 200,
  pollIntervalMs: 50,
  handlers: {
    "xlang.capture": async (payload: { invoiceId: string }, ctx: HandlerContext) => {
      runs++;
      const charge = await ctx.checkpoint("charge", async () => ({
        chargeId: `ch_${payload.invoiceId}`,
        attempt: ctx.attempt,
      }));
      if (charge.attempt === ctx.attempt) {
        process.stdout.write("checkpointed\n");
        await new Promise(() => {}); // the process is killed here
      }
      return { charge, finishedInAttempt: ctx.attempt, runsHere: runs };
    },
  },
});
await worker.start();
process.stdout.write("started\n");
process.on("SIGTERM", () => {
  void worker
    .stop({ graceMs: 0 })
    .then(() => pool.end())
    .then(() => process.exit(0));
});
