/**
 * The rules every public input shares (names, keys, scopes, durations, dates, text PostgreSQL can
 * store) as zod schemas built once, and the helpers that turn zod issues into `ValidationIssue`s.
 * enqueue-input.ts, operator-input.ts and the settings of `Queue` and `Worker` are made of these.
 */
import { z } from "zod";
import { EnqueueValidationError, type ValidationIssue } from "./errors";
import { LIMITS } from "./limits";
import { utf8Bytes } from "./payload-text";

export const chars = (s: string) => Array.from(s).length;
const CONTROL = /\p{Cc}/u;

const name = () =>
  z
    .string({ error: `must be a string of 1..${LIMITS.nameChars} characters` })
    .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.nameChars, {
      error: `must be 1..${LIMITS.nameChars} characters`,
    })
    .refine((s) => !CONTROL.test(s), { error: "must not contain control characters" })
    .refine((s) => s.isWellFormed(), { error: "must be well-formed Unicode (no lone surrogates)" });

// Schemas are built once: zod compiles each object schema on first use, so building them per call
// would cost a compile per request.
export const typeName = name();
export const queueName = name();

/** Whether `value` is a queue name the core accepts (1..`LIMITS.nameChars` characters, no control characters, well-formed). */
export function isQueueName(value: unknown): value is string {
  return queueName.safeParse(value).success;
}

export const keyString = z
  .string({ error: `must be a string of 1..${LIMITS.keyBytes} UTF-8 bytes` })
  .refine((s) => s.length > 0 && utf8Bytes(s) <= LIMITS.keyBytes, {
    error: `must be 1..${LIMITS.keyBytes} UTF-8 bytes`,
  })
  .refine((s) => s.isWellFormed(), { error: "must be well-formed Unicode (no lone surrogates)" });

/** PostgreSQL text cannot hold NUL, and lone surrogates cannot be encoded as UTF-8. */
export function storableText(s: string): boolean {
  return s.isWellFormed() && !s.includes("\u0000");
}
export const STORABLE_TEXT_RULE = "must be well-formed Unicode without NUL characters";

export const scopeString = z
  .string({ error: `must be a string of 1..${LIMITS.scopeBytes} UTF-8 bytes` })
  .refine((s) => s.length > 0 && utf8Bytes(s) <= LIMITS.scopeBytes, {
    error: `must be 1..${LIMITS.scopeBytes} UTF-8 bytes`,
  })
  .refine(storableText, { error: STORABLE_TEXT_RULE });

export const windowMs = z
  .number({ error: `must be an integer number of milliseconds, 1..${LIMITS.maxWindowMs}` })
  .min(1, { error: `must be at least 1 ms` })
  .max(LIMITS.maxWindowMs, { error: `must be at most ${LIMITS.maxWindowMs} ms (365 days)` })
  .int({ error: `must be an integer number of milliseconds, 1..${LIMITS.maxWindowMs}` });

export const delayMs = z
  .number({ error: `must be an integer number of milliseconds, 0..${LIMITS.maxWindowMs}` })
  .min(0, { error: "must be at least 0 ms" })
  .max(LIMITS.maxWindowMs, { error: `must be at most ${LIMITS.maxWindowMs} ms (365 days)` })
  .int({ error: "must be an integer number of milliseconds" });

// Years 1..9999: the range that ISO 8601 timestamps (what PostgreSQL is sent) write with four digits.
const MIN_TIME = new Date("0001-01-01T00:00:00.000Z").getTime();
const MAX_TIME = new Date("9999-12-31T23:59:59.999Z").getTime();

/** The observation label: 1..128 characters without control characters. */
export const sourceLabel = z
  .string({ error: `must be a string of 1..${LIMITS.sourceChars} characters` })
  .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.sourceChars, {
    error: `must be 1..${LIMITS.sourceChars} characters`,
  })
  .refine((s) => s.isWellFormed() && !CONTROL.test(s), {
    error: "must be well-formed Unicode without control characters",
  });

export const validDate = z
  .date({ error: "must be a Date" })
  .refine((d) => !Number.isNaN(d.getTime()), { error: "must be a valid Date" })
  .refine((d) => d.getTime() >= MIN_TIME && d.getTime() <= MAX_TIME, {
    error: "must be between the years 1 and 9999 (UTC)",
  });

/** A zod error's issues as `ValidationIssue`s, their option paths under `root`; unknown keys named one by one. */
export function issuesOf(error: z.ZodError, root: string): ValidationIssue[] {
  return error.issues.map((i) => ({
    option: [root, ...i.path.map(String), ...(i.code === "unrecognized_keys" ? i.keys : [])].filter(Boolean).join("."),
    rule: i.code === "unrecognized_keys" ? "is not a known option" : i.message,
  }));
}

/** `input` (absent: `{}`) parsed by `schema`; throws `EnqueueValidationError` naming each option under `option`. */
export function parseOptions<T extends z.ZodType>(schema: T, input: unknown, option = "options"): z.output<T> {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new EnqueueValidationError(issuesOf(r.error, option));
  return r.data;
}

/**
 * The names in `options` that `known` does not list (own enumerable string keys only), sorted.
 * `known` is written as `{ name: true, … } satisfies Record<keyof Options, true>` beside each options
 * type, so a new option that is not added there fails to compile.
 */
export function unknownOptionNames(options: object, known: Readonly<Record<string, true>>): string[] {
  return Object.keys(options)
    .filter((name) => !Object.hasOwn(known, name))
    .sort();
}
