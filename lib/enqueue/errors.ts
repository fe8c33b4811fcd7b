/**
 * Typed errors thrown by the enqueue core. Every error is an `Error` subclass with a stable `code`.
 * None of them ever carries a raw idempotency key: only its preview, digest and length.
 */

/** SQLSTATEs the core knows by name. Translated into typed errors in one place (enqueue-call.ts `translate`). */
export const SqlState = {
  /** Raised by workhorse.enqueue_one() / enqueue_batch() when a live key is reused for different work. */
  idempotencyConflict: "WH409",
  /** Raised by workhorse.redrive_jobs() when a redrive request id is reused for a different request. */
  redriveConflict: "WH412",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  uniqueViolation: "23505",
  checkViolation: "23514",
  untranslatableCharacter: "22P05",
  invalidTextRepresentation: "22P02",
} as const;

/** SQLSTATEs that are an expected answer, not a broken connection: the client is kept. */
export const EXPECTED_SQLSTATES: ReadonlySet<string> = new Set([
  SqlState.idempotencyConflict,
  SqlState.redriveConflict,
  SqlState.serializationFailure,
  SqlState.deadlockDetected,
  SqlState.checkViolation,
  SqlState.untranslatableCharacter,
  SqlState.invalidTextRepresentation,
]);

/**
 * The error classes an error belongs to, by their `kind` names, under a key shared by every copy of
 * this module: a bundler may load lib/enqueue more than once in one process (Next.js builds route
 * handlers, pages and server actions as separate layers), and an error thrown by a `Queue` made in
 * one copy must still pass `instanceof` against the class imported in another.
 */
const KINDS = Symbol.for("@workhorse/error-kinds");

export class WorkhorseError extends Error {
  /** The class's name for `instanceof` across copies of this module (every subclass declares its own). */
  static readonly kind: string = "WorkhorseError";
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    const kinds: string[] = [];
    for (let c: unknown = new.target; typeof c === "function" && c !== Error; c = Object.getPrototypeOf(c)) {
      if (Object.hasOwn(c, "kind")) kinds.push((c as unknown as { kind: string }).kind);
    }
    Object.defineProperty(this, KINDS, { value: Object.freeze(kinds) });
  }

  /** `instanceof` by prototype, or by `kind` for an error made by another copy of this module. */
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about, a subclass too.
    const asked = this as typeof WorkhorseError;
    if (Function.prototype[Symbol.hasInstance].call(asked, value)) return true;
    if (typeof value !== "object" || value === null || !Object.hasOwn(asked, "kind")) return false;
    const kinds = (value as { [KINDS]?: unknown })[KINDS];
    return Array.isArray(kinds) && kinds.includes(asked.kind);
  }
}

/** One failed input rule. `option` is a dotted path such as `idempotency.ttlMs` or `requests[3].payload`. */
export interface ValidationIssue {
  option: string;
  rule: string;
  /**
   * Where inside a JSON value the rule failed, for `payload` (e.g. `$.items[1]["due at"]`): the
   * same path syntax as `payloadPaths`. Paths only, never values; the rule ends with `(at <path>)`.
   */
  path?: string;
}

/** Bad input. Thrown before anything is sent to PostgreSQL, so nothing is written. */
export class EnqueueValidationError extends WorkhorseError {
  static override readonly kind: string = "EnqueueValidationError";
  /** The first failing option (dotted path). */
  readonly option: string;
  /** The rule it broke, in words. */
  readonly rule: string;
  /** Every failing option, in input order: one issue each (its first broken rule). */
  readonly issues: readonly ValidationIssue[];
  constructor(given: readonly ValidationIssue[]) {
    const seen = new Set<string>();
    const issues = given.filter((i) => !seen.has(i.option) && seen.add(i.option));
    const first = issues[0] ?? { option: "(input)", rule: "is invalid" };
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
    super("ENQUEUE_VALIDATION", `${first.option}: ${first.rule}${more}`);
    this.option = first.option;
    this.rule = first.rule;
    this.issues = issues;
  }
}

/** "payload differs", "payload and type differ", "maxAttempts, payload and type differ". */
function differing(fields: string[]): string {
  if (fields.length <= 1) return `${fields[0] ?? "the request"} differs`;
  return `${fields.slice(0, -1).join(", ")} and ${fields.at(-1)} differ`;
}

export interface IdempotencyConflictDetails {
  scope: string;
  keyPreview: string;
  keyDigest: string;
  keyLength: number;
  /**
   * The job that owns the key. Null only inside a batch whose earlier request for the same new key
   * differs from this one (that job was never created: the batch rolled back).
   */
  existingJobId: string | null;
  /** The mode that holds the key (`idempotency`, `debounce`, `throttle`). */
  existingMode: string;
  /** Sorted fingerprint field names that differ (docs/enqueue.md, what counts as the same request), plus `mode` when the key is held in another mode. */
  conflictingFields: string[];
  storedRequestDigest: string;
  rejectedRequestDigest: string;
  /** 1-based position of the rejected request in its batch (1 for a single enqueue). */
  ordinal: number;
  /** JSON paths whose values differ, when the payload differs; never the values. At most 100, sorted. */
  payloadPaths?: string[];
  /** True when more than 100 paths differ and `payloadPaths` holds the first 100. */
  payloadPathsTruncated?: boolean;
}

/**
 * A live scoped key is bound to a job whose request differs from this one. Nothing was written:
 * the whole call (the whole batch) rolled back. Inside a caller's transaction, that transaction is
 * now aborted, as after any SQL error; roll it back (or use a savepoint) before going on.
 */
export class EnqueueIdempotencyConflictError extends WorkhorseError implements IdempotencyConflictDetails {
  static override readonly kind: string = "EnqueueIdempotencyConflictError";
  readonly scope: string;
  readonly keyPreview: string;
  readonly keyDigest: string;
  readonly keyLength: number;
  readonly existingJobId: string | null;
  readonly existingMode: string;
  readonly conflictingFields: string[];
  readonly storedRequestDigest: string;
  readonly rejectedRequestDigest: string;
  readonly ordinal: number;
  readonly payloadPaths?: string[];
  readonly payloadPathsTruncated?: boolean;
  constructor(d: IdempotencyConflictDetails, options?: { cause?: unknown }) {
    super(
      "ENQUEUE_IDEMPOTENCY_CONFLICT",
      `Idempotency key ${d.keyPreview} (digest ${d.keyDigest}, scope ${JSON.stringify(d.scope)}) is bound to ${
        d.existingJobId ? `job ${d.existingJobId}` : "an earlier request of the same batch"
      } with a different request: ${differing(d.conflictingFields)}. Use a new key for new work, or repeat the original request.`,
      options,
    );
    this.scope = d.scope;
    this.keyPreview = d.keyPreview;
    this.keyDigest = d.keyDigest;
    this.keyLength = d.keyLength;
    this.existingJobId = d.existingJobId;
    this.existingMode = d.existingMode;
    this.conflictingFields = d.conflictingFields;
    this.storedRequestDigest = d.storedRequestDigest;
    this.rejectedRequestDigest = d.rejectedRequestDigest;
    this.ordinal = d.ordinal;
    if (d.payloadPaths) this.payloadPaths = d.payloadPaths;
    if (d.payloadPathsTruncated) this.payloadPathsTruncated = true;
  }
  /** Plain, JSON-safe details (for server actions and APIs). */
  toJSON(): IdempotencyConflictDetails & { code: string; message: string } {
    return {
      code: this.code,
      message: this.message,
      scope: this.scope,
      keyPreview: this.keyPreview,
      keyDigest: this.keyDigest,
      keyLength: this.keyLength,
      existingJobId: this.existingJobId,
      existingMode: this.existingMode,
      conflictingFields: this.conflictingFields,
      storedRequestDigest: this.storedRequestDigest,
      rejectedRequestDigest: this.rejectedRequestDigest,
      ordinal: this.ordinal,
      ...(this.payloadPaths ? { payloadPaths: this.payloadPaths } : {}),
      ...(this.payloadPathsTruncated ? { payloadPathsTruncated: true } : {}),
    };
  }
}

/** Purge refused: the job is `active` (a worker holds it) or terminal. Nothing changed. */
export class PurgeNotAllowedError extends WorkhorseError {
  static override readonly kind: string = "PurgeNotAllowedError";
  constructor(
    readonly jobId: string,
    readonly state: string,
  ) {
    super(
      "PURGE_NOT_ALLOWED",
      state === "active"
        ? `Job ${jobId} is active (a worker is running it); only ready and scheduled jobs can be purged. Wait for the attempt to finish.`
        : `Job ${jobId} is ${state}; only ready and scheduled jobs can be purged.`,
    );
  }
}

/**
 * A redrive `requestId` was used before for the same source job by a different requester or with a
 * different reason. Nothing was written: the whole call rolled back. Use a new request id for a new
 * redrive, or repeat the original request exactly to get its answer again.
 */
export class RedriveIdempotencyConflictError extends WorkhorseError {
  static override readonly kind: string = "RedriveIdempotencyConflictError";
  readonly sourceJobId: string;
  /** The job the first request with this id redrove `sourceJobId` to. */
  readonly existingJobId: string;
  /** Sorted names of what differs: `reason`, `requestedBy`. */
  readonly conflictingFields: string[];
  constructor(
    d: { sourceJobId: string; existingJobId: string; conflictingFields: string[] },
    options?: { cause?: unknown },
  ) {
    super(
      "REDRIVE_IDEMPOTENCY_CONFLICT",
      `This redrive request id already redrove job ${d.sourceJobId} to job ${d.existingJobId} with a different ${d.conflictingFields.join(" and ")}. Use a new request id for a new redrive.`,
      options,
    );
    this.sourceJobId = d.sourceJobId;
    this.existingJobId = d.existingJobId;
    this.conflictingFields = [...d.conflictingFields].sort();
  }
}

/**
 * `signal.reason` of a handler whose job an operator canceled (`queue.cancel`) while it ran. The
 * worker saw the request at a heartbeat; the attempt is recorded `canceled` and never retried.
 */
export class JobCanceledError extends WorkhorseError {
  static override readonly kind: string = "JobCanceledError";
  constructor(readonly jobId: string) {
    super("JOB_CANCELED", `Job ${jobId} was canceled by an operator.`);
  }
}

/** No job has this id. */
export class JobNotFoundError extends WorkhorseError {
  static override readonly kind: string = "JobNotFoundError";
  constructor(readonly jobId: string) {
    super("JOB_NOT_FOUND", `No job has id ${jobId}.`);
  }
}

/** The queue was closed: `close()` was called. Create a new `Queue` to go on. */
export class QueueClosedError extends WorkhorseError {
  static override readonly kind: string = "QueueClosedError";
  constructor() {
    super("QUEUE_CLOSED", "This Queue was closed; create a new Queue to enqueue again.");
  }
}

/**
 * A database failure the core does not translate. `cause` is the driver's error (with its SQLSTATE,
 * or a Node error code such as `ECONNRESET` for a broken connection).
 */
export class WorkhorseDatabaseError extends WorkhorseError {
  static override readonly kind: string = "WorkhorseDatabaseError";
  readonly sqlState: string | undefined;
  /**
   * True when the same call may simply be repeated: serialization failure (40001), deadlock (40P01),
   * too many connections (53300), lock timeout (55P03), a server shutting down, crashing or starting
   * (57P01-57P03), and connection loss (class 08, socket errors, "Connection terminated").
   */
  readonly retryable: boolean;
  constructor(message: string, cause: unknown) {
    const sqlState = sqlStateOf(cause);
    super("DATABASE", message, { cause });
    this.sqlState = sqlState;
    this.retryable = isRetryableDbError(cause);
  }
}

/** SQLSTATEs after which repeating the same statement may succeed. */
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  SqlState.serializationFailure,
  SqlState.deadlockDetected,
  "53300", // too_many_connections
  "55P03", // lock_not_available
  "57P01", // admin_shutdown (pg_terminate_backend, pg_ctl stop -m fast)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up or shutting down)
]);

// What node-postgres and pg-pool say when a connection breaks or cannot be had; they carry no code.
const CONNECTION_LOST_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
];

/** The connection broke or could not be opened (the statement may or may not have run). */
export function isConnectionLoss(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
    if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, ...
    return false;
  }
  const message = (err as { message?: unknown }).message;
  return typeof message === "string" && CONNECTION_LOST_MESSAGES.some((m) => message.startsWith(m));
}

/** A failure after which the same call may succeed: a retryable SQLSTATE or connection loss. */
export function isRetryableDbError(err: unknown): boolean {
  const state = sqlStateOf(err);
  if (state) return RETRYABLE_SQLSTATES.has(state) || state.startsWith("08");
  return isConnectionLoss(err);
}

/** Connection loss, server restarts and contention: the same call may succeed later. */
export function isTransientDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return true; // socket errors, "Connection terminated", timeouts
  return isRetryableDbError(err);
}

/**
 * PostgreSQL refused the statement and the session goes on, so the statement (an autocommit
 * statement is its own transaction) rolled back and wrote nothing: an error carrying a SQLSTATE
 * at severity ERROR, whatever its code; at another severity, or one this process cannot read, any
 * code but those that end the session (class 08, 57P01-57P03, severity FATAL or PANIC), after which
 * it may have committed before its reply was lost.
 */
export function refusedByServer(err: unknown): boolean {
  const state = sqlStateOf(err);
  if (state === undefined) return false;
  const severity = (err as { severity?: unknown }).severity;
  // ERROR: the session goes on whatever the code (a trigger may raise 08006 or 57P01 itself). A
  // server whose messages are translated (lc_messages) names severities in its language: then the
  // codes that end a session decide.
  if (severity === "ERROR") return true;
  return !/^(08|57P0)/.test(state) && severity !== "FATAL" && severity !== "PANIC";
}

/**
 * The SQLSTATE of an error PostgreSQL sent (a `pg` `DatabaseError`, which always carries the
 * server's `severity`); undefined for anything else. A Node system error's `code` is not a SQLSTATE even
 * when it has five letters (`EPIPE`, `EINTR`, `EBUSY`, `ESRCH`): those errors carry `errno` and
 * `syscall` instead, and read as connection loss (`isConnectionLoss`), not as a server's answer.
 */
export function sqlStateOf(err: unknown): string | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  return typeof severity === "string" ? code : undefined;
}

/**
 * Reads a property of a value of unknown shape: a throwing getter or proxy trap reads as undefined.
 * Used where input is inspected before validation, and where thrown values are summarised.
 */
export function readSafely(read: () => unknown): unknown {
  try {
    return read();
  } catch {
    return undefined;
  }
}

// The worker's errors (lib/worker): its configuration, and the reasons a handler's signal fires.

/** A worker's option was out of range. Thrown by `new Worker(...)`. */
export class WorkerConfigError extends WorkhorseError {
  static override readonly kind: string = "WorkerConfigError";
  constructor(
    readonly option: string,
    rule: string,
  ) {
    super("WORKER_CONFIG", `${option}: ${rule}`);
  }
}

/** The attempt's `executionTimeoutMs` elapsed: the handler's signal fires with this reason. */
export class ExecutionTimeoutError extends WorkhorseError {
  static override readonly kind: string = "ExecutionTimeoutError";
  constructor(readonly timeoutMs: number) {
    super("EXECUTION_TIMED_OUT", `The attempt ran longer than its executionTimeoutMs (${timeoutMs} ms).`);
  }
}

/** The job's deadline passed while the attempt ran: the handler's signal fires with this reason. */
export class DeadlineExceededError extends WorkhorseError {
  static override readonly kind: string = "DeadlineExceededError";
  constructor(readonly deadline: Date) {
    super("DEADLINE_EXCEEDED", `The job's deadline (${deadline.toISOString()}) passed.`);
  }
}

/**
 * This attempt no longer holds the job: its lease lapsed and the job was reaped or claimed again.
 * Its signal fires with this reason, and `heartbeat()`/`checkpoint()` throw it. Nothing the stale
 * attempt reports afterwards is recorded.
 */
export class LeaseLostError extends WorkhorseError {
  static override readonly kind: string = "LeaseLostError";
  constructor(
    readonly jobId: string,
    readonly attempt: number,
  ) {
    super("LEASE_LOST", `Attempt ${attempt} of job ${jobId} lost its lease; another attempt owns the job now.`);
  }
}

/**
 * The worker is stopping and its grace period ran out: the signal fires with this reason. `graceMs`:
 * the grace `stop()` gave running attempts (the worker always sets it; optional only so code that
 * made one without it still compiles).
 */
export class WorkerStoppingError extends WorkhorseError {
  static override readonly kind: string = "WorkerStoppingError";
  constructor(readonly graceMs?: number) {
    super(
      "WORKER_STOPPING",
      graceMs === undefined
        ? "The worker is shutting down; the attempt will be released and run again."
        : `The worker is shutting down and its ${graceMs} ms grace period ran out; the attempt will be released and run again (a longer stop({ graceMs }) lets attempts finish).`,
    );
  }
}

/** A handler's result or a checkpoint value that cannot be stored as JSON. */
export class NotStorableError extends WorkhorseError {
  static override readonly kind: string = "NotStorableError";
  constructor(what: string, reason: string) {
    super("NOT_STORABLE", `${what} cannot be stored as JSON: ${reason}`);
  }
}

/** A `queue.transaction` failure as its caller gets it: `fn`'s own errors as they are; begin/commit failures typed. */
export function transactionFailure(err: unknown): unknown {
  if (err instanceof WorkhorseError || !(sqlStateOf(err) || isConnectionLoss(err))) return err;
  return new WorkhorseDatabaseError(`transaction failed: ${(err as Error)?.message ?? String(err)}`, err);
}
