// One enqueueWithResult through the TypeScript core, for the cross-language tests: the argument is
// { type, payload, options } as JSON (runAt and deadline as ISO strings); prints { result } or { conflict }.
import pg from "pg";
import { EnqueueIdempotencyConflictError, Queue } from "../../../../lib/enqueue";

const input = JSON.parse(process.argv[2] ?? "{}");
const options = { ...(input.options ?? {}) };
for (const k of ["runAt", "deadline"]) if (typeof options[k] === "string") options[k] = new Date(options[k]);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
const queue = new Queue({ pool });
try {
  const result = await queue.enqueueWithResult(input.type, input.payload, options);
  console.log(JSON.stringify({ result }));
} catch (err) {
  if (!(err instanceof EnqueueIdempotencyConflictError)) throw err;
  console.log(JSON.stringify({ conflict: err.toJSON() }));
} finally {
  await queue.close();
  await pool.end();
}
