/**
 * An enqueue request checked against the input rules (docs/enqueue.md) and put in the canonical
 * form the database sees (`NormalizedRequest`): defaults filled, tags sorted, the key identified,
 * the fingerprint digests computed.
 */
import { z } from "zod";
import { EnqueueValidationError, readSafely, type ValidationIssue } from "./errors";
import {
  chars,
  delayMs,
  keyString,
  queueName,
  STORABLE_TEXT_RULE,
  scopeString,
  sourceLabel,
  storableText,
  typeName,
  validDate,
  windowMs,
} from "./input-rules";
import type { KeyIdentity, KeyRing } from "./keys";
import { DEFAULT_QUEUE, DEFAULT_SCOPE, LIMITS } from "./limits";
import { encodePayload } from "./payload";
import type {
  EnqueueOptions,
  EnqueueRequest,
  JobDefinition,
  KeyLifetime,
  KeyMode,
  NormalizedRetryPolicy,
} from "./types";
import { KEY_LIFETIMES, KEY_MODES } from "./vocabulary";

const retryPolicy = z.discriminatedUnion(
  "type",
  [
    z.strictObject({ type: z.literal("fixed"), delayMs }),
    z.strictObject({
      type: z.literal("exponential"),
      initialDelayMs: delayMs,
      multiplier: z
        .number({ error: "must be an integer 1..100" })
        .min(1, { error: "must be at least 1" })
        .max(100, { error: "must be at most 100" })
        .int({ error: "must be an integer 1..100" }),
      maxDelayMs: delayMs,
    }),
  ],
  { error: 'must be {type:"fixed", delayMs} or {type:"exponential", initialDelayMs, multiplier, maxDelayMs}' },
);

const holdUntil = z.enum(KEY_LIFETIMES, { error: 'must be "finished" or "started"' });

const idempotency = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  ttlMs: windowMs.optional(),
  holdUntil: holdUntil.optional(),
});

const debounce = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  windowMs,
  schedule: z.enum(["reset", "preserve"], { error: 'must be "reset" or "preserve"' }).optional(),
  maxWaitMs: windowMs.optional(),
  holdUntil: holdUntil.optional(),
});

// holdUntil is read here only to refuse it with a rule that says why (superRefine below).
const throttle = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  windowMs,
  holdUntil: z.unknown().optional(),
});

const optionsSchema = z
  .strictObject({
    queue: queueName.optional(),
    runAt: validDate.optional(),
    maxAttempts: z
      .number({ error: `must be an integer 1..${LIMITS.maxAttempts}` })
      .min(1, { error: "must be at least 1" })
      .max(LIMITS.maxAttempts, { error: `must be at most ${LIMITS.maxAttempts}` })
      .int({ error: `must be an integer 1..${LIMITS.maxAttempts}` })
      .optional(),
    retryPolicy: retryPolicy.optional(),
    deadline: validDate.optional(),
    executionTimeoutMs: windowMs.optional(),
    concurrencyKey: z
      .string({ error: `must be a string of 1..${LIMITS.concurrencyKeyChars} characters` })
      .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.concurrencyKeyChars, {
        error: `must be 1..${LIMITS.concurrencyKeyChars} characters`,
      })
      .refine(storableText, { error: STORABLE_TEXT_RULE })
      .optional(),
    tags: z
      .array(
        z
          .string({ error: `each tag must be a string of 1..${LIMITS.tagChars} characters` })
          .refine((s) => chars(s) >= 1 && chars(s) <= LIMITS.tagChars, {
            error: `each tag must be 1..${LIMITS.tagChars} characters`,
          })
          .refine(storableText, { error: STORABLE_TEXT_RULE }),
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
    if (o.throttle?.holdUntil !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["throttle", "holdUntil"],
        message: "throttle keys are held for their window only: use idempotency or debounce for a key lifetime",
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
export interface NormalizedRequest extends JobDefinition {
  /** JSON text of the payload, exactly as sent to PostgreSQL: jsonb's own text form when keyed. */
  payloadJson: string;
  runAt: Date | null;
  source: string | null;
  keyed: null | {
    mode: KeyMode;
    key: KeyIdentity;
    /**
     * The binding's time limit: `ttlMs` for idempotency (null with a lifetime and no `ttlMs`: no
     * limit), `windowMs` for debounce and throttle.
     */
    ttlMs: number | null;
    /** The key's lifetime (docs/enqueue.md, "Key lifetimes"), or null. */
    holdUntil: KeyLifetime | null;
    /** Debounce only (null otherwise): `reset` (default) or `preserve`. */
    schedule: "reset" | "preserve" | null;
    /** Debounce only: the cap on resets, counted from the first acceptance; null without one. */
    maxWaitMs: number | null;
  };
}

function prefix(path: ReadonlyArray<PropertyKey>, base: string): string {
  let out = base;
  for (const p of path) {
    out = typeof p === "number" ? `${out}[${p}]` : out ? `${out}.${String(p)}` : String(p);
  }
  return out || "options";
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
  config: RequestConfig,
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
  // A keyed request sends the payload as PostgreSQL's jsonb text (payload-text.ts), the text PostgreSQL
  // digests for its fingerprint.
  const keyedOption = optResult.success
    ? (optResult.data.idempotency ?? optResult.data.debounce ?? optResult.data.throttle)
    : undefined;
  let payloadJson = "";
  try {
    const form = keyedOption ? "jsonb" : "json";
    payloadJson = encodePayload(payload, config.maxPayloadBytes, prefix(["payload"], base), form).text;
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
  const keyed = keyedOption;
  if (keyed) {
    const mode: KeyMode = o.idempotency ? "idempotency" : o.debounce ? "debounce" : "throttle";
    const lifetime = "holdUntil" in keyed && keyed.holdUntil !== undefined ? (keyed.holdUntil as KeyLifetime) : null;
    const ttlMs =
      "windowMs" in keyed ? keyed.windowMs : (keyed.ttlMs ?? (lifetime === null ? LIMITS.defaultTtlMs : null));
    n.keyed = {
      mode,
      key: config.keys.identify(keyed.scope ?? DEFAULT_SCOPE, keyed.key),
      ttlMs,
      schedule: o.debounce ? (o.debounce.schedule ?? "reset") : null,
      maxWaitMs: o.debounce?.maxWaitMs ?? null,
      holdUntil: lifetime,
    };
  }
  return n;
}

/** The checks a request needs from its `Queue`: the payload bound, the default source, the key ring. */
type RequestConfig = { maxPayloadBytes: number; source: string | null; keys: KeyRing };

/** Whether these enqueue options ask for a keyed mode (so the installation key is needed). */
export function namesAKey(options: unknown): boolean {
  if (options === null || typeof options !== "object") return false;
  return (
    readSafely(() => {
      const o = options as Record<string, unknown>;
      return o.idempotency !== undefined || o.debounce !== undefined || o.throttle !== undefined;
    }) !== false
  );
}

/** `enqueueMany`'s argument checked: an array of at most `LIMITS.maxBatch` requests. */
export function checkBatch(requests: unknown): asserts requests is readonly EnqueueRequest[] {
  if (!Array.isArray(requests)) {
    throw new EnqueueValidationError([{ option: "requests", rule: "must be an array of { type, payload, options }" }]);
  }
  if (requests.length > LIMITS.maxBatch) {
    throw new EnqueueValidationError([
      {
        option: "requests",
        rule: `at most ${LIMITS.maxBatch} requests per batch (got ${requests.length}); split it`,
      },
    ]);
  }
}

/**
 * Every request of a batch checked and normalised, in input order; option paths are prefixed
 * `requests[i]`. The payloads together may hold at most `LIMITS.maxBatchPayloadBytes`.
 */
export function normalizeBatch(requests: readonly EnqueueRequest[], config: RequestConfig): NormalizedRequest[] {
  const normalized: NormalizedRequest[] = [];
  let totalBytes = 0;
  for (let i = 0; i < requests.length; i++) {
    const option = `requests[${i}]`;
    let r: EnqueueRequest | undefined;
    let type: unknown;
    let payload: unknown;
    let options: unknown;
    try {
      r = requests[i];
      if (typeof r !== "object" || r === null) {
        throw new EnqueueValidationError([{ option, rule: "must be { type, payload, options }" }]);
      }
      const extra = Object.keys(r).filter((k) => k !== "type" && k !== "payload" && k !== "options");
      if (extra.length > 0) {
        throw new EnqueueValidationError([{ option: `${option}.${extra[0]}`, rule: "is not a known field" }]);
      }
      ({ type, payload, options } = r);
    } catch (err) {
      if (err instanceof EnqueueValidationError) throw err;
      throw new EnqueueValidationError([
        { option, rule: `could not be read: ${(err as Error)?.message ?? String(err)}` },
      ]);
    }
    const n = normalizeRequest(type, payload, options, config, option);
    totalBytes += n.payloadJson.length;
    if (totalBytes > LIMITS.maxBatchPayloadBytes) {
      throw new EnqueueValidationError([
        {
          option: "requests",
          rule: `the payloads of one batch may total at most ${LIMITS.maxBatchPayloadBytes} bytes; split the batch`,
        },
      ]);
    }
    normalized.push(n);
  }
  return normalized;
}
