// The TypeScript core as a command for the Go tests' cross-language cases: reads one request as JSON
// from argv[2] ({ type, payload, options }, options as the TypeScript API takes them) and prints
// { jobId, outcome } or the conflict's fields as JSON. runAt and deadline travel as ISO 8601 strings.
import pg from "pg";
import { EnqueueIdempotencyConflictError, Queue } from "../../../lib/enqueue/index";

const request = JSON.parse(process.argv[2] ?? "{}") as {
  type: string;
  payload: unknown;
  options: Record<string, unknown>;
};
for (const name of ["runAt", "deadline"]) {
  const value = request.options[name];
  if (typeof value === "string") request.options[name] = new Date(value);
}
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
const queue = new Queue({ pool, maintenance: false, source: "go-tests" });
try {
  const r = await queue.enqueueWithResult(request.type, request.payload, request.options);
  console.log(JSON.stringify({ jobId: r.jobId, outcome: r.outcome, keyDigest: r.keyDigest }));
} catch (err) {
  if (!(err instanceof EnqueueIdempotencyConflictError)) throw err;
  console.log(
    JSON.stringify({
      conflict: true,
      existingJobId: err.existingJobId,
      conflictingFields: err.conflictingFields,
      payloadPaths: err.payloadPaths ?? [],
      keyDigest: err.keyDigest,
    }),
  );
} finally {
  await queue.close();
  await pool.end();
}
