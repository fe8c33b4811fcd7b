// A worker process for test/worker-crash.test.ts to kill with SIGKILL mid-handler: its heartbeats
// stop and its connections drop, as in a real crash. Not a test file itself.
//   node --import tsx test/worker-crash-child.ts <database url>
import pg from "pg";
import { type HandlerContext, Worker } from "../lib/enqueue";

const url = process.argv[2];
if (!url) throw new Error("usage: worker-crash-child.ts <database url>");
const pool = new pg.Pool({ connectionString: url, max: 4 });
const worker = new Worker({
  pool,
  queues: ["crash"],
  workerId: "doomed-worker",
  leaseMs: 1500,
  heartbeatIntervalMs: 200,
  pollIntervalMs: 50,
  handlers: {
    "order.ship": async (_payload: unknown, ctx: HandlerContext) => {
      await ctx.checkpoint("charge", async () => {
        await pool.query("insert into crash_effect (job_id, stage, attempt, worker) values ($1, 'charge', $2, $3)", [
          ctx.jobId,
          ctx.attempt,
          ctx.workerId,
        ]);
        return { chargeId: `ch_${ctx.jobId.slice(-6)}` };
      });
      process.stdout.write("checkpointed\n");
      await new Promise(() => {}); // the shipping call that never returns: the process dies here
    },
  },
});
await worker.start();
process.stdout.write("started\n");
