import { hash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { z } from "zod";
import { EnqueueValidationError, type ValidationIssue, WorkerConfigError } from "./errors";
import type { KeyIdentity, KeyRing } from "./keys";
import type { EnqueueOptions, KeyMode, NormalizedRetryPolicy } from "./types";
import { FINGERPRINT_FIELDS, type FingerprintField, KEY_MODES } from "./vocabulary";

import type { JobHandler, WorkerOptions } from "./worker/types";

/** The fingerprint fields the process digests (all but the payload), in their stored order. */
const DIGESTED_FIELDS = FINGERPRINT_FIELDS.filter((f): f is Exclude<FingerprintField, "payload"> => f !== "payload");

export const LIMITS = {
  keyBytes: 512,
  scopeBytes: 256,
  maxWindowMs: 31_536_000_000,
  defaultTtlMs: 86_400_000,
  nameChars: 128,
  maxTags: 32,
  tagChars: 128,
  maxAttempts: 1000,
  defaultMaxAttempts: 25,
  defaultPayloadBytes: 1024 * 1024,
  maxBatch: 1000,
  /** Sum of the encoded payloads of one enqueueMany call (they travel as one parameter). */
  maxBatchPayloadBytes: 64 * 1024 * 1024,
  concurrencyKeyChars: 256,
  sourceChars: 128,
  /** Who acted, in the audit log (a signed-in operator's name, or a service's). */
  actorChars: 200,
  /** Why, in the audit log and the job's timeline. */
  reasonChars: 1000,
  /**
   * How deeply objects and arrays may nest in a payload: `{}` and `[1]` are 1 level, `{"a": [1]}` is
   * 2 (docs/enqueue.md, input rules). PostgreSQL checks it again (the `workhorse.job_payload` domain).
   */
  maxPayloadDepth: 100,
} as const;

export const DEFAULT_QUEUE = "default";
export const DEFAULT_SCOPE = "default";

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");
const chars = (s: string) => Array.from(s).length;
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
const typeName = name();
const queueName = name();

const keyString = z
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

const scopeString = z
  .string({ error: `must be a string of 1..${LIMITS.scopeBytes} UTF-8 bytes` })
  .refine((s) => s.length > 0 && utf8Bytes(s) <= LIMITS.scopeBytes, {
    error: `must be 1..${LIMITS.scopeBytes} UTF-8 bytes`,
  })
  .refine((s) => s.isWellFormed() && !s.includes("\u0000"), {
    error: "must be well-formed Unicode without NUL characters",
  });

const windowMs = z
  .number({ error: `must be an integer number of milliseconds, 1..${LIMITS.maxWindowMs}` })
  .int({ error: `must be an integer number of milliseconds, 1..${LIMITS.maxWindowMs}` })
  .min(1, { error: `must be at least 1 ms` })
  .max(LIMITS.maxWindowMs, { error: `must be at most ${LIMITS.maxWindowMs} ms (365 days)` });

const delayMs = z
  .number({ error: `must be an integer number of milliseconds, 0..${LIMITS.maxWindowMs}` })
  .int({ error: "must be an integer number of milliseconds" })
  .min(0, { error: "must be at least 0 ms" })
  .max(LIMITS.maxWindowMs, { error: `must be at most ${LIMITS.maxWindowMs} ms (365 days)` });

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

const validDate = z
  .date({ error: "must be a Date" })
  .refine((d) => !Number.isNaN(d.getTime()), { error: "must be a valid Date" })
  .refine((d) => d.getTime() >= MIN_TIME && d.getTime() <= MAX_TIME, {
    error: "must be between the years 1 and 9999 (UTC)",
  });

const retryPolicy = z.discriminatedUnion(
  "type",
  [
    z.strictObject({ type: z.literal("fixed"), delayMs }),
    z.strictObject({
      type: z.literal("exponential"),
      initialDelayMs: delayMs,
      multiplier: z
        .number({ error: "must be an integer 1..100" })
        .int({ error: "must be an integer 1..100" })
        .min(1, { error: "must be at least 1" })
        .max(100, { error: "must be at most 100" }),
      maxDelayMs: delayMs,
    }),
  ],
  { error: 'must be {type:"fixed", delayMs} or {type:"exponential", initialDelayMs, multiplier, maxDelayMs}' },
);

const idempotency = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  ttlMs: windowMs.optional(),
});

const debounce = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  windowMs,
  schedule: z.enum(["reset", "preserve"], { error: 'must be "reset" or "preserve"' }).optional(),
  maxWaitMs: windowMs.optional(),
});

const throttle = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  windowMs,
});

const optionsSchema = z
  .strictObject({
    queue: queueName.optional(),
    runAt: validDate.optional(),
    maxAttempts: z
      .number({ error: `must be an integer 1..${LIMITS.maxAttempts}` })
      .int({ error: `must be an integer 1..${LIMITS.maxAttempts}` })
      .min(1, { error: "must be at least 1" })
      .max(LIMITS.maxAttempts, { error: `must be at most ${LIMITS.maxAttempts}` })
      .optional(),
    retryPolicy: retryPolicy.optional(),
    deadline: validDate.optional(),
    executionTimeoutMs: windowMs.optional(),
    concurrencyKey: z
      .string({ error: `must be a string of 1..${LIMITS.concurrencyKeyChars} characters` })
      .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.concurrencyKeyChars, {
        error: `must be 1..${LIMITS.concurrencyKeyChars} characters`,
      })
      .refine((s) => s.isWellFormed() && !s.includes("\u0000"), {
        error: "must be well-formed Unicode without NUL characters",
      })
      .optional(),
    tags: z
      .array(
        z
          .string({ error: `each tag must be a string of 1..${LIMITS.tagChars} characters` })
          .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.tagChars, {
            error: `each tag must be 1..${LIMITS.tagChars} characters`,
          })
          .refine((s) => s.isWellFormed() && !s.includes("\u0000"), {
            error: "must be well-formed Unicode without NUL characters",
          }),
        { error: "must be an array of strings" },
      )
      .max(LIMITS.maxTags, { error: `at most ${LIMITS.maxTags} tags` })
      .optional(),
    idempotency: idempotency.optional(),
    debounce: debounce.optional(),
    throttle: throttle.optional(),
    source: sourceLabel.optional(),
  })
  .superRefine((o, ctx) => {
    const modes = KEY_MODES.filter((m) => o[m] !== undefined);
    if (modes.length > 1) {
      ctx.addIssue({
        code: "custom",
        path: [modes[1] as string],
        message: `cannot be combined with ${modes[0]}: use one keyed mode per request`,
      });
    }
    if (o.deadline && o.deadline.getTime() <= (o.runAt ?? new Date()).getTime()) {
      ctx.addIssue({
        code: "custom",
        path: ["deadline"],
        message: o.runAt ? "must be after runAt" : "must be in the future (after runAt, which defaults to now)",
      });
    }
    if (o.retryPolicy?.type === "exponential" && o.retryPolicy.maxDelayMs < o.retryPolicy.initialDelayMs) {
      ctx.addIssue({ code: "custom", path: ["retryPolicy", "maxDelayMs"], message: "must be at least initialDelayMs" });
    }
    if (o.debounce && o.runAt) {
      ctx.addIssue({
        code: "custom",
        path: ["runAt"],
        message: "cannot be combined with debounce: a debounced job runs when its window closes (use windowMs)",
      });
    }
    if (o.debounce?.maxWaitMs !== undefined && o.debounce.maxWaitMs < o.debounce.windowMs) {
      ctx.addIssue({
        code: "custom",
        path: ["debounce", "maxWaitMs"],
        message: `must be at least windowMs (${o.debounce.windowMs})`,
      });
    }
  });

/** The canonical request the database sees. Dates are millisecond-precision UTC. */
export interface NormalizedRequest {
  type: string;
  queue: string;
  /** JSON text of the payload, exactly as sent to PostgreSQL. */
  payloadJson: string;
  runAt: Date | null;
  maxAttempts: number;
  retryPolicy: NormalizedRetryPolicy | null;
  deadline: Date | null;
  executionTimeoutMs: number | null;
  concurrencyKey: string | null;
  tags: string[];
  source: string | null;
  keyed: null | {
    mode: KeyMode;
    key: KeyIdentity;
    /** The binding's lifetime: `ttlMs` for idempotency, `windowMs` for debounce and throttle. */
    ttlMs: number;
    /** Debounce only (null otherwise): `reset` (default) or `preserve`. */
    schedule: "reset" | "preserve" | null;
    /** Debounce only: the cap on resets, counted from the first acceptance; null without one. */
    maxWaitMs: number | null;
    /**
     * 80 bytes: the 8-byte digests (first bytes of SHA-256 of the JSON form) of every fingerprint
     * field but the payload, in `workhorse.fingerprint_fields()` order (PostgreSQL digests the payload's
     * canonical jsonb and inserts it 5th).
     */
    fieldDigests: Buffer;
  };
}

function prefix(path: ReadonlyArray<PropertyKey>, base: string): string {
  let out = base;
  for (const p of path) {
    out = typeof p === "number" ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p);
  }
  return out || "options";
}

/**
 * How many more characters PostgreSQL's numeric form of `v` has than JavaScript's: jsonb writes
 * numbers without exponents, so `1e+21` is 22 digits and `-1e-7` is `-0.0000001` (10 characters for 5).
 */
function numericExpansion(v: number): number {
  const js = String(v);
  const e = js.indexOf("e");
  if (e < 0) return 0;
  const sign = v < 0 ? 1 : 0;
  // The mantissa's digits (at most 17, one before the point); JavaScript uses exponents only below
  // 1e-6 and from 1e21, so a positive exponent always exceeds the digits after the point.
  const digits = e - sign - (js.indexOf(".") < 0 ? 0 : 1);
  const exp = Number(js.slice(e + 1));
  const plain = sign + (exp >= 0 ? exp + 1 : 2 - exp - 1 + digits);
  return plain - js.length;
}

/**
 * Why JSON.stringify would store something other than `v` without a word: a Map or Set becomes `{}`,
 * a typed array an object of indices, an array hole `null`. Null when `v` serialises faithfully.
 */
function silentlyChanged(v: object): string | null {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return `an array has a hole at index ${i} (JSON would store null there)`;
      if (v[i] === undefined) return `an array holds undefined at index ${i} (JSON would store null there)`;
    }
    return null;
  }
  if (v instanceof Map || v instanceof WeakMap)
    return "a Map would be stored as {} (convert it with Object.fromEntries)";
  if (v instanceof Set || v instanceof WeakSet) return "a Set would be stored as {} (convert it to an array)";
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer)
    return "a typed array or buffer would be stored as an object of indices (convert it to an array or a string)";
  if (v instanceof RegExp || v instanceof Error || v instanceof Promise)
    return `a ${v.constructor.name} would be stored as {} (send its fields as plain values)`;
  return null;
}

/**
 * JSON text for a handler's result, a checkpoint value or an audit entry: JSON's own conversions
 * apply (a Date becomes a string, `toJSON` is called, properties holding `undefined` are left out),
 * but nothing jsonb cannot store or JSON would silently lose: no undefined at the top, no BigInt,
 * functions, symbols or cycles, only finite numbers, well-formed strings without NUL, no Map, Set,
 * typed arrays or array holes (see `silentlyChanged`), and at most `maxBytes` UTF-8 bytes encoded.
 * Payloads have stricter rules: `encodePayload`.
 */
export function serializePayload(payload: unknown, maxBytes: number, option = "payload"): string {
  const fail = (rule: string): never => {
    throw new EnqueueValidationError([{ option, rule }]);
  };
  // PostgreSQL stores numbers as numeric and writes them without exponents (1e308 is 309 digits),
  // so the limit counts what PostgreSQL will store and hash, not JavaScript's short form.
  let expansion = 0;
  if (payload === undefined) fail("must be JSON-serialisable: undefined is not a JSON value (use null or {})");
  let text: string | undefined;
  try {
    text = JSON.stringify(payload, function (this: unknown, k: string, v: unknown) {
      if (!k.isWellFormed() || k.includes("\u0000"))
        fail(`has a key that PostgreSQL cannot store (NUL or lone surrogate)`);
      switch (typeof v) {
        case "number":
          if (!Number.isFinite(v)) fail(`must contain only finite numbers (found ${String(v)})`);
          expansion += numericExpansion(v);
          break;
        case "string":
          if (!v.isWellFormed() || v.includes("\u0000"))
            fail("has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)");
          break;
        case "bigint":
          fail("must be JSON-serialisable: BigInt is not a JSON value (send it as a string)");
          break;
        case "function":
        case "symbol":
          fail(`must be JSON-serialisable: found a ${typeof v}`);
          break;
        case "object":
          if (v !== null) {
            const changed = silentlyChanged(v);
            if (changed) fail(`must be plain JSON: ${changed}`);
          }
          break;
      }
      return v;
    });
  } catch (err) {
    if (err instanceof EnqueueValidationError) throw err;
    fail(`must be JSON-serialisable: ${(err as Error).message.split("\n")[0]}`);
  }
  if (text === undefined) return fail("must be JSON-serialisable");
  const bytes = utf8Bytes(text) + expansion;
  if (bytes > maxBytes) fail(`must be at most ${maxBytes} bytes encoded as JSON (got ${bytes})`);
  return text;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Characters JSON.stringify writes as escapes: `"`, `\` and C0 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
const MAX_PATH_CHARS = 2000;

/** A JSON path in `payloadPaths` syntax: `$.a`, `$[0]`, `$["not an identifier"]`. */
function jsonPath(steps: ReadonlyArray<string | number>): string {
  let out = "$";
  for (const s of steps) {
    out += typeof s === "number" ? `[${s}]` : IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
    if (out.length > MAX_PATH_CHARS) return `${out.slice(0, MAX_PATH_CHARS - 1)}…`;
  }
  return out;
}

/**
 * The UTF-16 length JSON.stringify gives `s` (quotes and escapes included), or -1 when PostgreSQL
 * cannot store it (NUL, lone surrogates).
 */
function jsonStringUnits(s: string): number {
  if (!s.isWellFormed()) return -1;
  if (!NEEDS_ESCAPE.test(s)) return s.length + 2;
  let units = s.length + 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return -1;
    if (c === 0x22 || c === 0x5c || c === 8 || c === 9 || c === 10 || c === 12 || c === 13) units += 1;
    else if (c < 0x20) units += 5;
  }
  return units;
}

/** Why an object that is neither a plain object nor an array is refused. */
function notPlain(v: object): string {
  if (v instanceof Date) {
    return Number.isNaN(v.getTime())
      ? "an invalid Date would be stored as null"
      : "a Date would be stored as a string; send date.toISOString() (or epoch milliseconds) instead";
  }
  if (v instanceof Number || v instanceof String || v instanceof Boolean) {
    return `a boxed ${v.constructor.name} would be stored as a plain ${typeof v.valueOf()}; send the primitive`;
  }
  const changed = silentlyChanged(v);
  if (changed) return changed;
  const name = typeof v.constructor === "function" && v.constructor.name ? v.constructor.name : "a class";
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") {
    return `an instance of ${name} has toJSON: JSON would store what toJSON returns; send that value instead`;
  }
  return `an instance of ${name} would be stored as a plain object without its class; send a plain object`;
}

/** A payload as sent to PostgreSQL: its JSON text and the bytes PostgreSQL stores for it. */
export interface EncodedPayload {
  text: string;
  /** `octet_length(payload::jsonb::text)`: what the size limit counts. */
  bytes: number;
}

/**
 * Checks a payload and returns its JSON text. A payload is JSON that survives a round trip
 * unchanged (docs/enqueue.md, input rules): plain objects (prototype `Object.prototype` or null)
 * and arrays, nested at most `LIMITS.maxPayloadDepth` levels, holding strings (well-formed, no
 * NUL), finite numbers, booleans and null. Refused, with the JSON path where it was found: undefined
 * (anywhere: JSON would drop a property or store null), Dates (valid or not), boxed primitives,
 * class instances, anything with `toJSON`, symbol-keyed properties, Map, Set, typed arrays, array
 * holes, BigInt, functions, symbols and cycles. The size is what PostgreSQL stores, the jsonb text
 * form (a space after every `:` and `,`, numbers without exponents), at most `maxBytes`.
 *
 * One iterative walk (no recursion, so any depth is a validation error rather than a stack
 * overflow) checks everything, and stops as soon as the text is sure to exceed `maxBytes` (a value
 * shared many times over cannot make it walk for long); the text is then JSON.stringify's, and its
 * UTF-8 length plus what PostgreSQL adds is the size. Properties are read as JSON reads them (own,
 * enumerable, string-keyed); a getter is read twice, by the walk and by JSON.stringify.
 */
export function encodePayload(payload: unknown, maxBytes: number, option = "payload"): EncodedPayload {
  try {
    return walkPayload(payload, maxBytes, option);
  } catch (err) {
    if (err instanceof EnqueueValidationError) throw err;
    // A getter or proxy trap that throws.
    throw new EnqueueValidationError([
      { option, rule: `could not be read: ${String((err as Error)?.message ?? err).split("\n")[0]}` },
    ]);
  }
}

function walkPayload(payload: unknown, maxBytes: number, option: string): EncodedPayload {
  // The open containers, innermost last: the container, its keys (null for an array), the next
  // index to visit. Parallel arrays, so a step allocates nothing.
  const containers: object[] = [];
  const keyLists: Array<readonly string[] | null> = [];
  const nextIndex: number[] = [];
  let units = 0; // at most the UTF-16 length of JSON.stringify's text (so at most its UTF-8 bytes)
  let extra = 0; // what PostgreSQL's text adds: spaces after `:` and `,`, digits of exponents
  let value: unknown = payload;
  let step: string | number | null = null; // where `value` sits in the innermost container

  // The path to the value reached through the first `depth` open containers.
  const pathTo = (depth = containers.length): string => {
    const steps: Array<string | number> = [];
    for (let j = 0; j < depth; j++) {
      const keys = keyLists[j];
      const at = (nextIndex[j] as number) - 1;
      steps.push(keys ? String(keys[at]) : at);
    }
    return jsonPath(steps);
  };
  const fail = (rule: string, path = pathTo()): never => {
    throw new EnqueueValidationError([{ option, rule: `${rule} (at ${path})`, path }]);
  };

  for (;;) {
    switch (typeof value) {
      case "string": {
        const u = jsonStringUnits(value);
        if (u < 0) fail("has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)");
        units += u;
        break;
      }
      case "number":
        if (!Number.isFinite(value)) fail(`must contain only finite numbers (found ${String(value)})`);
        units += 1; // at least: the exact text is JSON.stringify's, measured at the end
        // Only exponent forms (below 1e-6, from 1e21) grow in PostgreSQL; formatting the others costs.
        if (value !== 0 && (value >= 1e21 || value <= -1e21 || (value < 1e-6 && value > -1e-6))) {
          extra += numericExpansion(value);
        }
        break;
      case "boolean":
        units += value ? 4 : 5;
        break;
      case "undefined":
        if (containers.length === 0) fail("must be JSON-serialisable: undefined is not a JSON value (use null or {})");
        if (typeof step === "number")
          fail(`must be plain JSON: an array holds undefined at index ${step} (JSON would store null there)`);
        fail("must be plain JSON: a property holds undefined, which JSON leaves out; omit the property or use null");
        break;
      case "bigint":
        fail("must be JSON-serialisable: BigInt is not a JSON value (send it as a string)");
        break;
      case "function":
        if (step === "toJSON")
          fail(
            "must be plain JSON: an object has a toJSON method, so JSON would store what it returns; send that value instead",
            pathTo(containers.length - 1),
          );
        fail("must be JSON-serialisable: found a function");
        break;
      case "symbol":
        fail("must be JSON-serialisable: found a symbol");
        break;
      case "object": {
        if (value === null) {
          units += 4;
          break;
        }
        let keys: readonly string[] | null = null;
        let count: number;
        if (Array.isArray(value)) {
          count = value.length;
        } else {
          const proto = Object.getPrototypeOf(value);
          if (proto !== Object.prototype && proto !== null) fail(`must be plain JSON: ${notPlain(value)}`);
          keys = Object.keys(value);
          count = keys.length;
          if (Object.getOwnPropertySymbols(value).length > 0) {
            fail("must be plain JSON: an object has a symbol-keyed property, which JSON leaves out");
          }
          extra += count; // the space after each `:`
        }
        if (containers.length >= LIMITS.maxPayloadDepth) {
          // A cycle is found here too: it would nest forever. Name the first repeated object.
          for (let i = 1; i < containers.length; i++) {
            if (containers.indexOf(containers[i] as object) < i) {
              fail("must be JSON-serialisable: it has a cycle (an object that contains itself)", pathTo(i));
            }
          }
          if (containers.includes(value))
            fail("must be JSON-serialisable: it has a cycle (an object that contains itself)");
          fail(`must be nested at most ${LIMITS.maxPayloadDepth} levels deep (objects and arrays)`);
        }
        units += count > 0 ? count + 1 : 2; // brackets and commas
        extra += count > 1 ? count - 1 : 0; // the space after each `,`
        containers.push(value);
        keyLists.push(keys);
        nextIndex.push(0);
        break;
      }
    }
    if (units + extra > maxBytes) {
      // Every UTF-16 unit is at least one UTF-8 byte: already over, whatever the rest holds.
      throw new EnqueueValidationError([
        { option, rule: `must be at most ${maxBytes} bytes as PostgreSQL stores it (jsonb text; this one is larger)` },
      ]);
    }
    // The next value: the innermost container's next member, closing finished containers.
    let found = false;
    while (containers.length > 0) {
      const top = containers.length - 1;
      const container = containers[top] as Record<string, unknown> & unknown[];
      const keys = keyLists[top] ?? null;
      const i = nextIndex[top] as number;
      if (keys === null) {
        if (i < container.length) {
          nextIndex[top] = i + 1;
          step = i;
          value = container[i];
          if (value === undefined && !(i in container)) {
            fail(`must be plain JSON: an array has a hole at index ${i} (JSON would store null there)`);
          }
          found = true;
          break;
        }
      } else if (i < keys.length) {
        nextIndex[top] = i + 1;
        const key = keys[i] as string;
        step = key;
        const ku = jsonStringUnits(key);
        if (ku < 0) fail("has a key that PostgreSQL cannot store (NUL or lone surrogate)");
        units += ku + 1; // the key and its `:`
        value = container[key];
        found = true;
        break;
      }
      containers.pop();
      keyLists.pop();
      nextIndex.pop();
    }
    if (!found) break;
  }
  const text = JSON.stringify(payload);
  const bytes = utf8Bytes(text) + extra;
  if (bytes > maxBytes) {
    throw new EnqueueValidationError([
      { option, rule: `must be at most ${maxBytes} bytes as PostgreSQL stores it (jsonb text; got ${bytes})` },
    ]);
  }
  return { text, bytes };
}

// Most fingerprint fields repeat across requests (queue, type, defaults, nulls): remember the digests
// of recent short values instead of hashing them again. Bounded (4,096 entries of at most 256
// characters); cleared when full.
const digestCache = new Map<string, Buffer>();
const fieldDigestCache = new Map<string, Buffer>();

function digest(value: unknown): Buffer {
  const text = JSON.stringify(value) ?? "undefined";
  let d = digestCache.get(text);
  if (d === undefined) {
    d = hash("sha256", text, "buffer").subarray(0, 8);
    if (text.length <= 256) {
      if (digestCache.size >= 4096) digestCache.clear();
      digestCache.set(text, d);
    }
  }
  return d;
}

const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

export function normalizeRetryPolicy(p: EnqueueOptions["retryPolicy"]): NormalizedRetryPolicy | null {
  if (!p) return null;
  if (p.type === "fixed") return { initialDelayMs: p.delayMs, multiplier: 1, maxDelayMs: p.delayMs };
  return { initialDelayMs: p.initialDelayMs, multiplier: p.multiplier, maxDelayMs: p.maxDelayMs };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Parses the options object. Only plain objects are read (no class instances, no inherited
 * options), and anything that throws while being read (a getter, a proxy) is a validation error.
 */
function readOptions(options: unknown, optBase: string): ReturnType<typeof optionsSchema.safeParse> {
  const refuse = (option: string, rule: string): never => {
    throw new EnqueueValidationError([{ option, rule }]);
  };
  if (options === undefined || options === null) return optionsSchema.safeParse({});
  if (!isPlainObject(options)) refuse(optBase, "must be a plain object of options");
  try {
    for (const nested of [...KEY_MODES, "retryPolicy"]) {
      const v = (options as Record<string, unknown>)[nested];
      if (v !== undefined && !isPlainObject(v)) refuse(`${optBase}.${nested}`, "must be a plain object");
    }
    return optionsSchema.safeParse(options);
  } catch (err) {
    if (err instanceof EnqueueValidationError) throw err;
    return refuse(optBase, `could not be read: ${(err as Error)?.message ?? String(err)}`);
  }
}

/**
 * Checks one request against the input rules (docs/enqueue.md) and returns its canonical form.
 * Throws `EnqueueValidationError` naming every failing option; `base` prefixes the option paths
 * (e.g. `requests[3]`) for batches.
 */
export function normalizeRequest(
  type: unknown,
  payload: unknown,
  options: unknown,
  config: { maxPayloadBytes: number; source: string | null; keys: KeyRing },
  base = "",
): NormalizedRequest {
  const issues: ValidationIssue[] = [];
  const typeResult = typeName.safeParse(type);
  if (!typeResult.success) {
    for (const i of typeResult.error.issues) issues.push({ option: prefix(["type"], base), rule: i.message });
  }
  const optBase = base ? `${base}.options` : "options";
  const optResult = readOptions(options, optBase);
  if (!optResult.success) {
    for (const i of optResult.error.issues) {
      const path = i.code === "unrecognized_keys" ? [...i.path, ...i.keys] : i.path;
      const rule = i.code === "unrecognized_keys" ? "is not a known option" : i.message;
      issues.push({ option: prefix(path, optBase), rule });
    }
  }
  let payloadJson = "";
  try {
    payloadJson = encodePayload(payload, config.maxPayloadBytes, prefix(["payload"], base)).text;
  } catch (err) {
    if (!(err instanceof EnqueueValidationError)) throw err;
    issues.push(...err.issues);
  }
  if (issues.length > 0 || !optResult.success || !typeResult.success) throw new EnqueueValidationError(issues);

  const o = optResult.data;
  const tags = [...new Set(o.tags ?? [])].sort(bytewise);
  const n: NormalizedRequest = {
    type: typeResult.data,
    queue: o.queue ?? DEFAULT_QUEUE,
    payloadJson,
    runAt: o.runAt ? new Date(o.runAt.getTime()) : null,
    maxAttempts: o.maxAttempts ?? LIMITS.defaultMaxAttempts,
    retryPolicy: normalizeRetryPolicy(o.retryPolicy),
    deadline: o.deadline ? new Date(o.deadline.getTime()) : null,
    executionTimeoutMs: o.executionTimeoutMs ?? null,
    concurrencyKey: o.concurrencyKey ?? null,
    tags,
    source: o.source ?? config.source,
    keyed: null,
  };
  const keyed = o.idempotency ?? o.debounce ?? o.throttle;
  if (keyed) {
    const mode: KeyMode = o.idempotency ? "idempotency" : o.debounce ? "debounce" : "throttle";
    const ttlMs = "windowMs" in keyed ? keyed.windowMs : (keyed.ttlMs ?? LIMITS.defaultTtlMs);
    // Every fingerprint field but the payload (PostgreSQL digests that one), in FINGERPRINT_FIELDS
    // order. Requests of one stream mostly share these: the 80 bytes are remembered per distinct
    // combination (one JSON text, one map lookup on the hot path).
    const runAtIso = n.runAt ? n.runAt.toISOString() : null; // given runAt is never null: null = omitted
    const values: Record<Exclude<FingerprintField, "payload">, unknown> = {
      concurrencyKey: n.concurrencyKey,
      deadline: n.deadline?.toISOString() ?? null,
      executionTimeoutMs: n.executionTimeoutMs,
      maxAttempts: n.maxAttempts,
      queue: n.queue,
      retryPolicy: n.retryPolicy,
      runAt: runAtIso !== null ? runAtIso : { omitted: true },
      tags: n.tags,
      ttlMs,
      type: n.type,
    };
    const signature = JSON.stringify(DIGESTED_FIELDS.map((f) => values[f]));
    let fieldDigests = fieldDigestCache.get(signature);
    if (fieldDigests === undefined) {
      fieldDigests = Buffer.concat(DIGESTED_FIELDS.map((f) => digest(values[f])));
      if (signature.length <= 1024) {
        if (fieldDigestCache.size >= 4096) fieldDigestCache.clear();
        fieldDigestCache.set(signature, fieldDigests);
      }
    }
    n.keyed = {
      mode,
      key: config.keys.identify(keyed.scope ?? DEFAULT_SCOPE, keyed.key),
      ttlMs,
      schedule: o.debounce ? (o.debounce.schedule ?? "reset") : null,
      maxWaitMs: o.debounce?.maxWaitMs ?? null,
      fieldDigests,
    };
  }
  return n;
}

const uuidSchema = z.uuid({ error: "must be a job id (UUID)" });

/** Validates a job id; throws `EnqueueValidationError` for anything but a UUID string. */
export function parseJobId(id: unknown, option = "jobId"): string {
  const r = uuidSchema.safeParse(id);
  if (!r.success) throw new EnqueueValidationError([{ option, rule: "must be a job id (UUID)" }]);
  return r.data.toLowerCase();
}

/** Validates `{ key, scope? }` for lookups. `ttlMs` is allowed (and ignored), so idempotency options can be passed as they are. */
const scopedKeySchema = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  ttlMs: z.unknown().optional(),
});

export function parseScopedKey(input: unknown): { key: string; scope: string } {
  const r = scopedKeySchema.safeParse(input);
  if (!r.success) {
    throw new EnqueueValidationError(
      r.error.issues.map((i) => ({ option: i.path.join(".") || "input", rule: i.message })),
    );
  }
  return { key: r.data.key, scope: r.data.scope ?? DEFAULT_SCOPE };
}

/** Validates a queue name for purgeQueue. */
export function parseQueueName(queue: unknown): string {
  const r = queueName.safeParse(queue);
  if (!r.success)
    throw new EnqueueValidationError([{ option: "queue", rule: r.error.issues[0]?.message ?? "is invalid" }]);
  return r.data;
}

/** Validates `{ actor, reason }` for operator actions. */
const operatorContextSchema = z.strictObject({
  actor: z
    .string({ error: "must be a string" })
    .trim()
    .min(1, { error: "is required" })
    .max(LIMITS.actorChars, { error: `must be at most ${LIMITS.actorChars} characters` })
    .refine(storableText, { error: STORABLE_TEXT_RULE }),
  reason: z
    .string({ error: "must be a string" })
    .trim()
    .min(1, { error: "is required: say why" })
    .max(LIMITS.reasonChars, { error: `must be at most ${LIMITS.reasonChars} characters` })
    .refine(storableText, { error: STORABLE_TEXT_RULE }),
});

export function parseOperatorContext(input: unknown): { actor: string; reason: string } {
  const r = operatorContextSchema.safeParse(input);
  if (!r.success) {
    throw new EnqueueValidationError(
      r.error.issues.map((i) => ({ option: i.path.join(".") || "context", rule: i.message })),
    );
  }
  return r.data;
}

// Maintenance options (Queue({ maintenance }), pruneExpiredBindings, pruneObservations).
const count = (max: number) => z.number().int().min(1).max(max);
export const pruneBindingsSchema = z.strictObject({
  limit: count(100_000).default(1000),
  maxBatches: z
    .union([count(Number.MAX_SAFE_INTEGER), z.literal(Number.POSITIVE_INFINITY)])
    .default(Number.POSITIVE_INFINITY),
});
export const reapLeasesSchema = z.strictObject({ limit: count(100_000).default(1000) });
export const pruneObservationsSchema = z.strictObject({
  olderThanMs: z
    .number()
    .int()
    .min(60_000)
    .max(10 * 31_536_000_000)
    .default(7 * 86_400_000),
  limit: count(100_000).default(5000),
});
export const maintenanceConfigSchema = z.strictObject({
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(86_400_000)
    .default(5 * 60_000),
  observationRetentionMs: z
    .number()
    .int()
    .min(60_000)
    .max(10 * 31_536_000_000)
    .default(7 * 86_400_000),
  jobRetentionMs: z
    .number()
    .int()
    .min(60_000)
    .max(10 * 31_536_000_000)
    .default(7 * 86_400_000),
  batchSize: count(100_000).default(1000),
});

export function parseMaintenanceOptions<T extends z.ZodType>(
  schema: T,
  input: unknown,
  option = "options",
): z.output<T> {
  const r = schema.safeParse(input ?? {});
  if (!r.success) {
    throw new EnqueueValidationError(
      r.error.issues.map((i) => ({
        option: [option, ...i.path.map(String), ...(i.code === "unrecognized_keys" ? i.keys : [])].join("."),
        rule: i.code === "unrecognized_keys" ? "is not a known option" : i.message,
      })),
    );
  }
  return r.data;
}

/** `Queue({ retry })`: how keyed calls through the pool repeat themselves (see QueueOptions.retry). */
export const retryConfigSchema = z.strictObject({
  attempts: z.number().int().min(1).max(20).default(12),
  maxDelayMs: z.number().int().min(0).max(60_000).default(3000),
});

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

export function parseRetryOption(input: unknown): false | { attempts: number; maxDelayMs: number } {
  if (input === false) return false;
  return parseMaintenanceOptions(retryConfigSchema, input, "retry");
}

function issuesOf(error: z.ZodError, root: string) {
  return error.issues.map((i) => ({
    option: [root, ...i.path.map(String), ...(i.code === "unrecognized_keys" ? i.keys : [])].filter(Boolean).join("."),
    rule: i.code === "unrecognized_keys" ? "is not a known option" : i.message,
  }));
}

/** At most this many job ids per operator call. */
export const MAX_JOB_IDS = 1000;

const jobIdList = z
  .array(z.uuid({ error: "must be a job id (UUID)" }), { error: "must be an array of job ids" })
  .min(1, { error: "must hold at least one job id" })
  .max(MAX_JOB_IDS, { error: `must hold at most ${MAX_JOB_IDS} job ids; split the selection` });

const jobSelectionSchema = z.strictObject({ jobIds: jobIdList });

/** `{ jobIds }`: 1..1,000 UUIDs, lower-cased, duplicates removed (first occurrence kept). */
export function parseJobSelection(input: unknown): string[] {
  const r = jobSelectionSchema.safeParse(input);
  if (!r.success) throw new EnqueueValidationError(issuesOf(r.error, ""));
  return [...new Set(r.data.jobIds.map((id) => id.toLowerCase()))];
}

const redriveSchema = z.strictObject({
  jobIds: jobIdList,
  requestId: keyString,
  requestedBy: operatorContextSchema.shape.actor,
  reason: operatorContextSchema.shape.reason,
  dryRun: z.boolean({ error: "must be true or false" }).optional(),
});

export function parseRedriveRequest(input: unknown): {
  jobIds: string[];
  requestId: string;
  requestedBy: string;
  reason: string;
  dryRun: boolean;
} {
  const r = redriveSchema.safeParse(input);
  if (!r.success) throw new EnqueueValidationError(issuesOf(r.error, ""));
  return {
    jobIds: [...new Set(r.data.jobIds.map((id) => id.toLowerCase()))],
    requestId: r.data.requestId,
    requestedBy: r.data.requestedBy,
    reason: r.data.reason,
    dryRun: r.data.dryRun ?? false,
  };
}

const deadLetterSchema = z.strictObject({
  queue: queueName.optional(),
  type: typeName.optional(),
  errorName: z.string().min(1).max(200).optional(),
  finishedAfter: validDate.optional(),
  finishedBefore: validDate.optional(),
  cursor: z
    .string()
    .max(200)
    .regex(/^[A-Za-z0-9_-]+$/, { error: "must be a nextCursor from an earlier page" })
    .optional(),
  limit: z.number().int().min(1).max(500).default(50),
});

export interface DeadLetterCursor {
  finishedAt: string;
  id: string;
}

export function encodeDeadLetterCursor(c: DeadLetterCursor): string {
  return Buffer.from(JSON.stringify([c.finishedAt, c.id])).toString("base64url");
}

export function parseDeadLetterQuery(input: unknown) {
  const r = deadLetterSchema.safeParse(input ?? {});
  if (!r.success) throw new EnqueueValidationError(issuesOf(r.error, ""));
  let cursor: DeadLetterCursor | null = null;
  if (r.data.cursor) {
    try {
      const [finishedAt, id] = JSON.parse(Buffer.from(r.data.cursor, "base64url").toString("utf8")) as unknown[];
      if (typeof finishedAt !== "string" || Number.isNaN(Date.parse(finishedAt)) || !z.uuid().safeParse(id).success) {
        throw new Error("bad cursor");
      }
      cursor = { finishedAt, id: id as string };
    } catch {
      throw new EnqueueValidationError([{ option: "cursor", rule: "must be a nextCursor from an earlier page" }]);
    }
  }
  return { ...r.data, cursor };
}

export const pruneFinishedJobsSchema = z.strictObject({
  olderThanMs: z
    .number()
    .int()
    .min(60_000)
    .max(10 * 31_536_000_000)
    .default(7 * 86_400_000),
  limit: count(100_000).default(1000),
  maxBatches: z
    .union([count(Number.MAX_SAFE_INTEGER), z.literal(Number.POSITIVE_INFINITY)])
    .default(Number.POSITIVE_INFINITY),
});

/**
 * `recordOperatorAction`'s entry checked: actor 1..LIMITS.actorChars after trimming, action 1..64
 * lowercase letters or underscores, target 1..300 characters, reason optional; all storable text;
 * the result a JSON object within the payload limit. Throws `EnqueueValidationError`.
 */
export function parseOperatorEntry(entry: {
  actor: string;
  action: string;
  target: string;
  reason?: string | null;
  result: Record<string, unknown>;
}): { actor: string; action: string; target: string; reason: string | null; resultJson: string } {
  const actor = typeof entry?.actor === "string" ? entry.actor.trim() : "";
  if (!actor || actor.length > LIMITS.actorChars) {
    throw new EnqueueValidationError([{ option: "actor", rule: `is required (1..${LIMITS.actorChars} characters)` }]);
  }
  if (typeof entry.action !== "string" || !/^[a-z_]{1,64}$/.test(entry.action)) {
    throw new EnqueueValidationError([{ option: "action", rule: "must be 1..64 lowercase letters or underscores" }]);
  }
  if (typeof entry.target !== "string" || entry.target.length < 1 || entry.target.length > 300) {
    throw new EnqueueValidationError([{ option: "target", rule: "must be 1..300 characters" }]);
  }
  if (!storableText(actor) || !storableText(entry.target)) {
    throw new EnqueueValidationError([{ option: storableText(actor) ? "target" : "actor", rule: STORABLE_TEXT_RULE }]);
  }
  if (entry.reason != null && (typeof entry.reason !== "string" || !storableText(entry.reason))) {
    throw new EnqueueValidationError([{ option: "reason", rule: `must be a string; ${STORABLE_TEXT_RULE}` }]);
  }
  const resultJson = serializePayload(entry.result ?? {}, LIMITS.defaultPayloadBytes, "result");
  return { actor, action: entry.action, target: entry.target, reason: entry.reason ?? null, resultJson };
}

// ---------------------------------------------------------------------------------------------
// Worker options (docs/worker.md, "Options")

function int(option: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new WorkerConfigError(option, `must be an integer ${min}..${max} (got ${String(value)})`);
  }
  return v;
}

/** Default retry policy when a job has none: 1 s, doubling, capped at 1 h. */
export const DEFAULT_RETRY_POLICY: NormalizedRetryPolicy = {
  initialDelayMs: 1000,
  multiplier: 2,
  maxDelayMs: 3_600_000,
};

/** Every `WorkerOptions` name: `new Worker` refuses any other. */
const WORKER_OPTION_NAMES = {
  pool: true,
  queues: true,
  handlers: true,
  concurrency: true,
  workerId: true,
  leaseMs: true,
  heartbeatIntervalMs: true,
  pollIntervalMs: true,
  reapIntervalMs: true,
  abortGraceMs: true,
  maxResultBytes: true,
  defaultRetryPolicy: true,
  listen: true,
  onEvent: true,
  onError: true,
} as const satisfies Record<keyof WorkerOptions, true>;

/**
 * `new Worker(options)`'s options checked and defaulted (bounds in docs/worker.md). Throws
 * `WorkerConfigError` naming the option and its rule.
 */
export function workerSettings(options: WorkerOptions) {
  if (!options || typeof options.pool?.connect !== "function") throw new WorkerConfigError("pool", "must be a pg.Pool");
  const [unknown] = unknownOptionNames(options, WORKER_OPTION_NAMES);
  if (unknown !== undefined) throw new WorkerConfigError(unknown, "is not a known option");
  const pool = options.pool;
  const queues = options.queues ?? ["default"];
  if (!Array.isArray(queues) || queues.length === 0 || queues.some((q) => typeof q !== "string" || !q)) {
    throw new WorkerConfigError("queues", "must be a non-empty array of queue names");
  }
  const uniqueQueues = [...new Set(queues)];
  if (!options.handlers || typeof options.handlers !== "object") {
    throw new WorkerConfigError("handlers", 'must map job types (or "*") to functions');
  }
  const handlers = new Map<string, JobHandler<unknown>>();
  for (const [type, fn] of Object.entries(options.handlers)) {
    if (typeof fn !== "function") throw new WorkerConfigError(`handlers.${type}`, "must be a function");
    handlers.set(type, fn as JobHandler<unknown>);
  }
  if (handlers.size === 0) throw new WorkerConfigError("handlers", "must have at least one handler");
  const types = handlers.has("*") ? null : [...handlers.keys()];
  const concurrency = int("concurrency", options.concurrency, 1, 1, 1000);
  const leaseMs = int("leaseMs", options.leaseMs, 30_000, 200, 86_400_000);
  const heartbeatIntervalMs = int(
    "heartbeatIntervalMs",
    options.heartbeatIntervalMs,
    Math.floor(leaseMs / 3),
    10,
    leaseMs - 1,
  );
  const pollIntervalMs = int("pollIntervalMs", options.pollIntervalMs, 1000, 10, 3_600_000);
  const reapIntervalMs = int("reapIntervalMs", options.reapIntervalMs, 1000, 0, 3_600_000);
  const abortGraceMs = int("abortGraceMs", options.abortGraceMs, 5000, 0, 3_600_000);
  const maxResultBytes = int(
    "maxResultBytes",
    options.maxResultBytes,
    LIMITS.defaultPayloadBytes,
    2,
    256 * 1024 * 1024,
  );
  const policy: NormalizedRetryPolicy = options.defaultRetryPolicy
    ? (normalizeRetryPolicy(options.defaultRetryPolicy) as NormalizedRetryPolicy)
    : DEFAULT_RETRY_POLICY;
  for (const [k, v] of Object.entries(policy)) {
    if (!Number.isInteger(v) || v < 0 || v > 31_536_000_000) {
      throw new WorkerConfigError(`defaultRetryPolicy.${k}`, "must be an integer 0..31536000000");
    }
  }
  const defaultPolicyJson = JSON.stringify(policy);
  const workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  if (typeof workerId !== "string" || workerId.length < 1 || workerId.length > 200) {
    throw new WorkerConfigError("workerId", "must be 1..200 characters");
  }
  return {
    pool,
    queues: uniqueQueues,
    handlers,
    types,
    concurrency,
    leaseMs,
    heartbeatIntervalMs,
    pollIntervalMs,
    reapIntervalMs,
    abortGraceMs,
    maxResultBytes,
    defaultPolicyJson,
    workerId,
  };
}
