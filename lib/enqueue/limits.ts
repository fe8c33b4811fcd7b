/**
 * The core's bounds and defaults, with no imports that need Node or a database: the console's
 * browser code shows them as hints and checks forms against them (through client.ts).
 */
import type { NormalizedRetryPolicy } from "./types";

/** 365 days in milliseconds: the longest TTL, window or delay a request may ask for. */
export const ONE_YEAR_MS = 31_536_000_000;

/** One day in milliseconds: the default TTL of an idempotency key. */
export const ONE_DAY_MS = 86_400_000;

export const LIMITS = {
  keyBytes: 512,
  scopeBytes: 256,
  maxWindowMs: ONE_YEAR_MS,
  defaultTtlMs: ONE_DAY_MS,
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

/** Retention of observations and finished jobs: at least a minute, at most ten years, 7 days unless told. */
export const RETENTION = { minMs: 60_000, maxMs: 10 * ONE_YEAR_MS, defaultMs: 7 * ONE_DAY_MS } as const;

export const DEFAULT_QUEUE = "default";
export const DEFAULT_SCOPE = "default";

/** At most this many job ids per operator call. */
export const MAX_JOB_IDS = 1000;

/** Default retry policy when a job has none: 1 s, doubling, capped at 1 h. */
export const DEFAULT_RETRY_POLICY: NormalizedRetryPolicy = {
  initialDelayMs: 1000,
  multiplier: 2,
  maxDelayMs: 3_600_000,
};
