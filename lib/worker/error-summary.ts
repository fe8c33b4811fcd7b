/**
 * What a worker stores when an attempt fails or returns: the bounded error summary kept in
 * `last_error`, the JSON text of results and checkpoints, and which database errors a worker may
 * simply retry.
 */
import { EnqueueValidationError, NotStorableError, readSafely } from "../enqueue/errors";
import { LIMITS } from "../enqueue/limits";
import { serializePayload } from "../enqueue/payload";

/** Why an attempt failed, as stored in `workhorse.job.last_error` and in the event data. */
export interface ErrorSummary {
  /** The error's `name` (or `"NonError"` when something other than an Error was thrown). ≤ 128 chars. */
  name: string;
  /** ≤ 1,000 characters. */
  message: string;
  /** The first ≤ 4,000 characters of the stack. */
  stack?: string;
  /** A string or number `code` property, when the error has one (SQLSTATEs, Node error codes). */
  code?: string;
  /** The `cause`, summarised the same way, at most 2 levels deep. */
  cause?: ErrorSummary;
}

const ERROR_LIMITS = { name: 128, message: 1000, stack: 4000, causeDepth: 2 } as const;

/** Well-formed, NUL-free (jsonb rejects U+0000), at most `max` characters. */
function clean(s: string, max: number): string {
  const t = s.toWellFormed().replaceAll("\u0000", "\uFFFD");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** Text for a value of unknown shape, never throwing: JSON, else String(), else its tag. */
function describeValue(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    const json = JSON.stringify(value);
    if (typeof json === "string") return json;
  } catch {
    // toJSON threw, a cycle, a BigInt: try String() next
  }
  try {
    return String(value);
  } catch {
    return (readSafely(() => Object.prototype.toString.call(value)) as string | undefined) ?? "(unreadable value)";
  }
}

function isErrorLike(err: unknown): err is Error {
  try {
    return err instanceof Error; // a Proxy's getPrototypeOf trap may throw
  } catch {
    return false;
  }
}

/**
 * A bounded, JSON-safe summary of anything thrown: name, message, truncated stack, code, cause.
 * Never throws: a numeric `name`, a non-string `message`, throwing getters, proxies and values
 * whose `toJSON` throws give what could be read, so the attempt still fails at once with a record.
 */
export function summarizeError(err: unknown, depth = 0): ErrorSummary {
  try {
    if (isErrorLike(err)) {
      const name = readSafely(() => err.name);
      const message = readSafely(() => err.message);
      const out: ErrorSummary = {
        name: clean(
          typeof name === "string" && name ? name : name === undefined || name === "" ? "Error" : describeValue(name),
          ERROR_LIMITS.name,
        ),
        message: clean(message === undefined ? "" : describeValue(message), ERROR_LIMITS.message),
      };
      const stack = readSafely(() => err.stack);
      if (typeof stack === "string") out.stack = clean(stack, ERROR_LIMITS.stack);
      const code = readSafely(() => (err as { code?: unknown }).code);
      if (typeof code === "string" || typeof code === "number") out.code = clean(String(code), ERROR_LIMITS.name);
      const cause = readSafely(() => err.cause);
      if (cause !== undefined && depth < ERROR_LIMITS.causeDepth) out.cause = summarizeError(cause, depth + 1);
      return out;
    }
    return { name: "NonError", message: clean(describeValue(err), ERROR_LIMITS.message) };
  } catch {
    return { name: "NonError", message: "(the thrown value could not be read)" };
  }
}

/**
 * JSON text for a `jsonb` column (a handler's result, a checkpoint value); `undefined` becomes `null`.
 * The payload's rules apply (see `serializePayload`): JSON values only (no BigInt, Map, Set, typed
 * arrays, array holes, cycles, non-finite numbers), strings PostgreSQL can store (no NUL, no lone
 * surrogate such as half an emoji from slicing a string), at most `maxBytes` encoded.
 * Throws `NotStorableError` naming the rule.
 */
export function toJsonText(value: unknown, what: string, maxBytes: number = LIMITS.defaultPayloadBytes): string {
  try {
    return serializePayload(value === undefined ? null : value, maxBytes, what);
  } catch (err) {
    throw new NotStorableError(what, err instanceof EnqueueValidationError ? err.rule : describeValue(err));
  }
}
