/**
 * The console's enqueue-test form, one field table: labels, hints and bounds (from the core's
 * LIMITS), read by the form (components/enqueue-form.tsx) and by the server action that parses it
 * (mutations.ts builds its zod schema and maps the core's validation errors back to fields from it).
 * Client-safe: imports only the core's client entry.
 */
import { DEFAULT_QUEUE, DEFAULT_SCOPE, KEY_MODES, LIMITS } from "@workhorse/core/client";

const n = (v: number) => v.toLocaleString("en-US");

type FieldSpec =
  | { kind: "text"; label: string; hint?: string }
  | { kind: "int"; label: string; min: number; max: number; hint?: string }
  | { kind: "choice"; label: string; values: readonly string[]; error: string; hint?: string };

const windowHint = `1 to ${n(LIMITS.maxWindowMs)}.`;

/** Every field the form posts, in form order; `label` is how messages name it. */
export const ENQUEUE_FIELDS = {
  type: { kind: "text", label: "Type", hint: "Job type, e.g. invoice.capture" },
  queue: { kind: "text", label: "Queue", hint: `Default "${DEFAULT_QUEUE}"` },
  payload: { kind: "text", label: "Payload" },
  mode: {
    kind: "choice",
    label: "Key mode",
    values: KEY_MODES,
    error: "Key mode must be idempotency, debounce or throttle",
  },
  key: { kind: "text", label: "Idempotency key" },
  scope: { kind: "text", label: "Scope", hint: `Default "${DEFAULT_SCOPE}"` },
  ttlMs: {
    kind: "int",
    label: "TTL",
    min: 1,
    max: LIMITS.maxWindowMs,
    hint: `1 to ${n(LIMITS.maxWindowMs)}; default ${n(LIMITS.defaultTtlMs)} (24 h)`,
  },
  holdUntil: {
    kind: "choice",
    label: "Key lifetime",
    values: ["finished", "started"],
    error: "Key lifetime must be finished or started (or empty: the TTL alone)",
    hint: "Empty: the key is held for its TTL. finished: also until its job finishes; started: until a worker starts it (docs/enqueue.md, Key lifetimes)",
  },
  windowMs: { kind: "int", label: "Window", min: 1, max: LIMITS.maxWindowMs, hint: windowHint },
  schedule: {
    kind: "choice",
    label: "Schedule",
    values: ["reset", "preserve"],
    error: "Schedule must be reset or preserve",
    hint: "reset: each repeat moves the run time; preserve: keeps it",
  },
  maxWaitMs: {
    kind: "int",
    label: "Max wait",
    min: 1,
    max: LIMITS.maxWindowMs,
    hint: "Optional, at least the window: the latest run time, counted from the first acceptance",
  },
  runAt: { kind: "text", label: "Run at", hint: "Optional; your local time. Empty: now." },
  tags: { kind: "text", label: "Tags", hint: `Comma separated, at most ${LIMITS.maxTags}` },
  maxAttempts: {
    kind: "int",
    label: "Max attempts",
    min: 1,
    max: LIMITS.maxAttempts,
    hint: `1 to ${LIMITS.maxAttempts}; default ${LIMITS.defaultMaxAttempts}`,
  },
} as const satisfies Record<string, FieldSpec>;

export type EnqueueField = keyof typeof ENQUEUE_FIELDS;
export const ENQUEUE_FIELD_NAMES = Object.keys(ENQUEUE_FIELDS) as EnqueueField[];

/** Payload text the form sends at most; below next.config.js's server-action body limit (4 MB). */
export const MAX_PAYLOAD_TEXT_BYTES = 3_500_000;

/** The form's message for a payload too large to send at all. */
export function payloadTooLarge(bytes: number): string {
  return `Payload too large: ${n(bytes)} bytes. A job payload may be at most ${n(LIMITS.defaultPayloadBytes)} bytes of JSON; the form sends at most ${n(MAX_PAYLOAD_TEXT_BYTES)} bytes of text.`;
}
