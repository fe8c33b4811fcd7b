/**
 * The worker's SQL functions as every client calls them: each function's arguments (SQL types, in
 * order) and result columns. The TypeScript worker builds its calls from this table
 * (`workerCall`); the conformance file (sdk/conformance/enqueue.json, `workerCalls`) carries it to
 * the Python and Go workers, whose tests check their own statements against it, and
 * test/request-fields.test.ts checks it against the functions' signatures in pg_proc, so a change
 * to one of these functions fails the tests of all three clients until each is brought in line.
 */
interface Column {
  name: string;
  type: string;
}

export interface WorkerFunction {
  /** The arguments' SQL types, in order (what each call casts its parameters to). */
  args: readonly string[];
  /** The result columns (OUT / TABLE columns), in order. */
  columns: readonly Column[];
}

const cols = (spec: string): Column[] =>
  spec.split(", ").map((c) => {
    const at = c.indexOf(" ");
    return { name: c.slice(0, at), type: c.slice(at + 1) };
  });

export const WORKER_FUNCTIONS = {
  claim_jobs: {
    args: ["text[]", "text[]", "text", "integer", "integer", "boolean"],
    columns: cols(
      "id uuid, queue text, type text, payload jsonb, attempt integer, max_attempts integer, " +
        "run_at timestamp with time zone, deadline timestamp with time zone, execution_timeout_ms bigint, " +
        "concurrency_key text, tags text[], created_at timestamp with time zone, " +
        "lease_expires_at timestamp with time zone, trace_context text",
    ),
  },
  heartbeat_jobs: {
    args: ["uuid[]", "integer[]", "text[]", "integer"],
    columns: cols(
      "id uuid, attempt integer, lease_owner text, lease_expires_at timestamp with time zone, cancel_requested boolean",
    ),
  },
  complete_jobs: { args: ["uuid[]", "integer[]", "text[]", "jsonb[]"], columns: cols("id uuid") },
  cancel_attempt: { args: ["uuid", "integer", "text"], columns: cols("id uuid") },
  fail_job: {
    args: ["uuid", "integer", "text", "jsonb", "text", "jsonb"],
    columns: cols("state text, run_at timestamp with time zone, delay_ms bigint"),
  },
  release_jobs: { args: ["uuid[]", "integer[]", "text[]", "text"], columns: cols("id uuid") },
  save_checkpoint: {
    args: ["uuid", "integer", "text", "text", "jsonb", "integer"],
    columns: cols("status text, value jsonb"),
  },
} as const satisfies Record<string, WorkerFunction>;

export type WorkerFunctionName = keyof typeof WORKER_FUNCTIONS;

/** `workhorse.<name>($1::type, $2::type, …)`: the call as every client writes it. */
export function workerCall(name: WorkerFunctionName): string {
  return `workhorse.${name}(${WORKER_FUNCTIONS[name].args.map((t, i) => `$${i + 1}::${t}`).join(", ")})`;
}
