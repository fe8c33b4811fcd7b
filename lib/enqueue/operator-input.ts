/**
 * Operator input checked (docs/operator-actions.md): job ids and selections, who acted and why,
 * redrive requests, dead-letter queries and their cursors, audit entries, and the bounds of
 * maintenance and retention calls.
 */
import { z } from "zod";
import { EnqueueValidationError } from "./errors";
import {
  issuesOf,
  keyString,
  queueName,
  STORABLE_TEXT_RULE,
  scopeString,
  storableText,
  typeName,
  validDate,
} from "./input-rules";
import { DEFAULT_SCOPE, LIMITS, MAX_JOB_IDS, RETENTION } from "./limits";
import { serializePayload } from "./payload";

const uuidSchema = z.uuid({ error: "must be a job id (UUID)" });

/** Validates a job id; throws `EnqueueValidationError` for anything but a UUID string. */
export function parseJobId(id: unknown, option = "jobId"): string {
  const r = uuidSchema.safeParse(id);
  if (!r.success) throw new EnqueueValidationError([{ option, rule: "must be a job id (UUID)" }]);
  return r.data.toLowerCase();
}

/**
 * Validates `{ key, scope? }` for lookups. `ttlMs` and `holdUntil` are allowed (and ignored), so
 * idempotency options can be passed as they are.
 */
const scopedKeySchema = z.strictObject({
  key: keyString,
  scope: scopeString.optional(),
  ttlMs: z.unknown().optional(),
  holdUntil: z.unknown().optional(),
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
const requiredText = (max: number, missing: string) =>
  z
    .string({ error: "must be a string" })
    .trim()
    .min(1, { error: missing })
    .max(max, { error: `must be at most ${max} characters` })
    .refine(storableText, { error: STORABLE_TEXT_RULE });
const operatorContextSchema = z.strictObject({
  actor: requiredText(LIMITS.actorChars, "is required"),
  reason: requiredText(LIMITS.reasonChars, "is required: say why"),
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

// Maintenance and retention options (pruneExpiredBindings, pruneObservations, reapExpiredLeases,
// pruneFinishedJobs, and the maintenance timer's settings).
export const count = (max: number) => z.number().int().min(1).max(max);
/** A retention in milliseconds (RETENTION's bounds), 7 days unless told. */
export const retentionMs = () =>
  z.number().int().min(RETENTION.minMs).max(RETENTION.maxMs).default(RETENTION.defaultMs);
const maxBatches = () =>
  z.union([count(Number.MAX_SAFE_INTEGER), z.literal(Number.POSITIVE_INFINITY)]).default(Number.POSITIVE_INFINITY);
export const pruneBindingsSchema = z.strictObject({ limit: count(100_000).default(1000), maxBatches: maxBatches() });
export const reapLeasesSchema = z.strictObject({ limit: count(100_000).default(1000) });
export const pruneObservationsSchema = z.strictObject({
  olderThanMs: retentionMs(),
  limit: count(100_000).default(5000),
});
export const pruneFinishedJobsSchema = z.strictObject({
  olderThanMs: retentionMs(),
  limit: count(100_000).default(1000),
  maxBatches: maxBatches(),
});

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
  again: z.boolean({ error: "must be true or false" }).optional(),
});

export function parseRedriveRequest(input: unknown): {
  jobIds: string[];
  requestId: string;
  requestedBy: string;
  reason: string;
  dryRun: boolean;
  again: boolean;
} {
  const r = redriveSchema.safeParse(input);
  if (!r.success) throw new EnqueueValidationError(issuesOf(r.error, ""));
  return {
    jobIds: [...new Set(r.data.jobIds.map((id) => id.toLowerCase()))],
    requestId: r.data.requestId,
    requestedBy: r.data.requestedBy,
    reason: r.data.reason,
    dryRun: r.data.dryRun ?? false,
    again: r.data.again ?? false,
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
  includeRedriven: z.boolean({ error: "must be true or false" }).default(false),
});

interface DeadLetterCursor {
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
