import "server-only";
import {
  DEFAULT_QUEUE,
  DEFAULT_SCOPE,
  EnqueueIdempotencyConflictError,
  type EnqueueOptions,
  EnqueueValidationError,
  JobNotFoundError,
  type KEY_MODES,
  LIMITS,
  PurgeNotAllowedError,
  type Queue,
} from "@workhorse/core";
/**
 * What the console's server actions do, with the actor passed in (app/ actions take it from the
 * session). Every write goes through lib/enqueue; every expected failure is a returned value. Reads
 * live in the read models beside it (find-key.ts, jobs.ts, …).
 */
import { z } from "zod";
import type { EnqueueFormState, FieldErrors, FindKeyState, MaintenanceState, PurgeState } from "../wire/action-state";
import { ENQUEUE_FIELD_NAMES, ENQUEUE_FIELDS, type EnqueueField } from "../wire/enqueue-fields";
import { KEY_LABELS } from "../wire/outcome-text";

const text = (v: FormDataEntryValue | null): string => (typeof v === "string" ? v : "");
const optional = (v: FormDataEntryValue | null): string | undefined => {
  const s = text(v).trim();
  return s === "" ? undefined : s;
};

/** Which form field an `EnqueueValidationError` option belongs to ("form" when none). */
function fieldOf(path: string): EnqueueField | "form" {
  const option = path.replace(/^options\./, "").replace(/^(idempotency|debounce|throttle)\./, "");
  return ENQUEUE_FIELD_NAMES.find((f) => option.startsWith(f)) ?? "form";
}

function validationState(
  err: EnqueueValidationError,
  keyLabel: string = ENQUEUE_FIELDS.key.label,
): EnqueueFormState & FindKeyState & PurgeState {
  const fieldErrors: FieldErrors = {};
  for (const i of err.issues) {
    const f = fieldOf(i.option);
    const label = f === "form" ? i.option.replace(/^options\./, "") : f === "key" ? keyLabel : ENQUEUE_FIELDS[f].label;
    fieldErrors[f] ??= `${label} ${i.rule}`;
  }
  return { status: "error", message: "Check the highlighted fields.", fieldErrors };
}

const intField = (label: string, min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, { error: `${label} must be a whole number` })
    .transform(Number)
    .refine((n) => n >= min && n <= max, {
      error: `${label} must be between ${min} and ${max.toLocaleString("en-US")}`,
    });

type Fields = typeof ENQUEUE_FIELDS;
/** What the form's schema gives: numbers for the `int` fields, the allowed words for the choices. */
type EnqueueFormValues = { type: string; tzOffset?: string } & {
  [K in Exclude<EnqueueField, "type">]?: Fields[K] extends { kind: "int" }
    ? number
    : Fields[K] extends { values: readonly (infer V)[] }
      ? V
      : string;
};

/** The form's schema, built from the field table: every field optional text but the type, bounds from LIMITS. */
const enqueueForm = z.object({
  ...Object.fromEntries(
    ENQUEUE_FIELD_NAMES.map((name) => {
      const f: (typeof ENQUEUE_FIELDS)[EnqueueField] = ENQUEUE_FIELDS[name];
      if (f.kind === "int") return [name, intField(f.label, f.min, f.max).optional()];
      if (f.kind === "choice")
        return [name, z.enum([...f.values] as [string, ...string[]], { error: f.error }).optional()];
      return [name, z.string().optional()];
    }),
  ),
  type: z
    .string({ error: `${ENQUEUE_FIELDS.type.label} is required` })
    .min(1, { error: `${ENQUEUE_FIELDS.type.label} is required` }),
  tzOffset: z
    .string()
    .regex(/^-?\d{1,4}$/)
    .optional(),
}) as unknown as z.ZodType<EnqueueFormValues>;

/** datetime-local value + the browser's `getTimezoneOffset()` (minutes) -> instant. ISO with zone also accepted. */
export function parseRunAt(value: string, tzOffsetMinutes: number | undefined): Date | null {
  const local = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(value);
  if (local) {
    const [, y, mo, d, h, mi, s] = local.map(Number) as number[];
    const utc = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s || 0);
    return new Date(utc + (tzOffsetMinutes ?? 0) * 60_000);
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : new Date(t);
  }
  return null;
}

let submissionSeq = 0;

/** The keyed option the form asks for (none without a key). */
function keyedOption(
  mode: (typeof KEY_MODES)[number],
  f: {
    key?: string;
    scope?: string;
    ttlMs?: number;
    holdUntil?: "finished" | "started";
    windowMs?: number;
    schedule?: "reset" | "preserve";
    maxWaitMs?: number;
  },
): EnqueueOptions {
  if (!f.key) return {};
  const scope = f.scope ? { scope: f.scope } : {};
  const holdUntil = f.holdUntil ? { holdUntil: f.holdUntil } : {};
  if (mode === "idempotency") {
    return {
      idempotency: { key: f.key, ...scope, ...(f.ttlMs !== undefined ? { ttlMs: f.ttlMs } : {}), ...holdUntil },
    };
  }
  const windowMs = f.windowMs as number;
  if (mode === "throttle") return { throttle: { key: f.key, ...scope, windowMs } };
  return {
    debounce: {
      key: f.key,
      ...scope,
      windowMs,
      ...holdUntil,
      ...(f.schedule ? { schedule: f.schedule } : {}),
      ...(f.maxWaitMs !== undefined ? { maxWaitMs: f.maxWaitMs } : {}),
    },
  };
}

/** Enqueue a test job from the form; audited as `enqueue_test` (result or conflict, never the key). */
export async function enqueueTestJob(queue: Queue, actor: string, form: FormData): Promise<EnqueueFormState> {
  const raw = Object.fromEntries([...ENQUEUE_FIELD_NAMES, "tzOffset"].map((k) => [k, optional(form.get(k))]));
  const parsed = enqueueForm.safeParse(raw);
  const fieldErrors: FieldErrors = {};
  if (!parsed.success) {
    for (const i of parsed.error.issues) fieldErrors[String(i.path[0] ?? "form")] ??= i.message;
  }
  let payload: unknown = {};
  if (raw.payload !== undefined) {
    try {
      payload = JSON.parse(raw.payload);
    } catch (e) {
      fieldErrors.payload = `Payload is not valid JSON: ${(e as Error).message}`;
    }
  }
  if (!parsed.success) return { status: "error", message: "Check the highlighted fields.", fieldErrors };
  const f = parsed.data;
  let runAt: Date | undefined;
  if (f.runAt) {
    const d = parseRunAt(f.runAt, f.tzOffset === undefined ? undefined : Number(f.tzOffset));
    if (!d) fieldErrors.runAt = "Run at must be a date and time, such as 2026-12-01T09:00";
    else runAt = d;
  }
  const mode = f.mode ?? "idempotency";
  const keyLabel = KEY_LABELS[mode];
  if (mode === "idempotency") {
    if (!f.key && (f.scope || f.ttlMs !== undefined)) {
      fieldErrors.key = "Scope and TTL apply to an idempotency key: enter a key, or clear Scope and TTL";
    }
  } else {
    if (!f.key) fieldErrors.key = `${keyLabel} is required: ${mode} works on a key`;
    if (f.windowMs === undefined) fieldErrors.windowMs = `Window is required for ${mode} (milliseconds)`;
  }
  if (f.holdUntil !== undefined && (mode === "throttle" || !f.key)) {
    fieldErrors.holdUntil =
      mode === "throttle"
        ? "A key lifetime applies to idempotency and debounce keys, not throttle: clear Key lifetime"
        : "Key lifetime applies to a key: enter a key, or clear Key lifetime";
  }
  if (mode !== "debounce" && (f.schedule !== undefined || f.maxWaitMs !== undefined)) {
    fieldErrors[f.maxWaitMs !== undefined ? "maxWaitMs" : "schedule"] =
      "Schedule and max wait apply to debounce only: choose debounce, or clear them";
  }
  if (Object.keys(fieldErrors).length > 0) {
    return { status: "error", message: "Check the highlighted fields.", fieldErrors };
  }
  const tags = f.tags
    ? f.tags
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean)
    : undefined;
  const options: EnqueueOptions = {
    ...(f.queue ? { queue: f.queue } : {}),
    ...(runAt ? { runAt } : {}),
    ...(f.maxAttempts !== undefined ? { maxAttempts: f.maxAttempts } : {}),
    ...(tags && tags.length > 0 ? { tags } : {}),
    ...keyedOption(mode, f),
    source: "console:enqueue-test",
  };
  const seq = ++submissionSeq;
  try {
    const scope = f.scope ?? DEFAULT_SCOPE;
    // The job and its audit row commit together, or neither does.
    const { result, keyed } = await queue.transaction(async (tx) => {
      const result = await tx.enqueueWithResult(f.type, payload, options);
      // What the core computed of the key for this request (no second hash).
      const keyed =
        f.key && result.keyDigest !== undefined
          ? {
              scope,
              keyPreview: result.keyPreview as string,
              keyDigest: result.keyDigest,
              keyLength: result.keyLength as number,
            }
          : null;
      await tx.recordOperatorAction({
        actor,
        action: "enqueue_test",
        target: `job:${result.jobId}`,
        result: {
          status: "ok",
          outcome: result.outcome,
          ...(result.outcome === "non_replaceable" ? { reason: result.reason } : {}),
          jobId: result.jobId,
          queue: options.queue ?? DEFAULT_QUEUE,
          type: f.type,
          ...(keyed ? { scope, keyDigest: keyed.keyDigest } : {}),
        },
      });
      return { result, keyed };
    });
    await queue.flushObservations();
    // The key holder's mode, for the result to name (the request's own mode is not the key's).
    const heldMode =
      f.key && result.outcome === "non_replaceable" && result.reason === "incompatible_key_mode"
        ? ((await queue.findBinding({ key: f.key, scope }))?.mode ?? null)
        : null;
    return {
      status: "done",
      outcome: result.outcome,
      reason: result.outcome === "non_replaceable" ? result.reason : null,
      mode: f.key ? mode : null,
      heldMode,
      jobId: result.jobId,
      keyed,
      seq,
    };
  } catch (err) {
    if (err instanceof EnqueueValidationError) return validationState(err, keyLabel);
    if (err instanceof EnqueueIdempotencyConflictError) {
      await queue.recordOperatorAction({
        actor,
        action: "enqueue_test",
        target: err.existingJobId ? `job:${err.existingJobId}` : `key:${err.scope}/${err.keyDigest}`,
        result: {
          status: "conflict",
          existingJobId: err.existingJobId,
          conflictingFields: err.conflictingFields,
          scope: err.scope,
          keyDigest: err.keyDigest,
        },
      });
      await queue.flushObservations();
      return {
        status: "conflict",
        seq,
        conflict: {
          message: err.message,
          scope: err.scope,
          keyPreview: err.keyPreview,
          keyDigest: err.keyDigest,
          keyLength: err.keyLength,
          existingJobId: err.existingJobId,
          existingMode: err.existingMode,
          conflictingFields: err.conflictingFields,
          payloadPaths: err.payloadPaths ?? null,
          storedRequestDigest: err.storedRequestDigest,
          rejectedRequestDigest: err.rejectedRequestDigest,
        },
      };
    }
    throw err;
  }
}

const reasonField = z
  .string()
  .trim()
  .min(1, { error: "Give a reason: it is kept with the tombstone and in the audit log" })
  .max(LIMITS.reasonChars, { error: `Reason must be at most ${LIMITS.reasonChars} characters` });

/** Both purge actions: a required reason, then the core call; refusals and bad input are returned. */
async function purgeWith(
  form: FormData,
  target: string,
  purge: (reason: string) => Promise<{ purged: number; releasedBindings: number }>,
): Promise<PurgeState> {
  const reason = reasonField.safeParse(text(form.get("reason")));
  if (!reason.success) {
    return {
      status: "error",
      message: "A reason is required.",
      fieldErrors: { reason: reason.error.issues[0]?.message },
    };
  }
  try {
    const r = await purge(reason.data);
    return { status: "done", purged: r.purged, releasedBindings: r.releasedBindings, target };
  } catch (err) {
    if (err instanceof PurgeNotAllowedError || err instanceof JobNotFoundError) {
      return { status: "refused", message: err.message };
    }
    if (err instanceof EnqueueValidationError) return validationState(err);
    throw err;
  }
}

export async function purgeJob(queue: Queue, actor: string, form: FormData): Promise<PurgeState> {
  const jobId = text(form.get("jobId"));
  return purgeWith(form, `job ${jobId}`, (reason) => queue.purge({ jobId }, { actor, reason }));
}

export async function purgeQueue(queue: Queue, actor: string, form: FormData): Promise<PurgeState> {
  const name = text(form.get("queue"));
  return purgeWith(form, `queue ${name}`, (reason) => queue.purgeQueue(name, { actor, reason }));
}

export async function runMaintenanceNow(queue: Queue, actor: string): Promise<MaintenanceState> {
  const r = await queue.runMaintenance({ trigger: "manual" });
  await queue.recordOperatorAction({
    actor,
    action: "run_maintenance",
    target: "maintenance",
    result: { status: "ok", ...r },
  });
  return { status: "done", ...r, at: new Date().toISOString() };
}
