/** `new Queue(options)`: the options, checked and defaulted into a `QueueConfig` (README, "Restarts"). */
import type pg from "pg";
import { z } from "zod";
import { EnqueueValidationError } from "./errors";
import { parseOptions, sourceLabel, unknownOptionNames } from "./input-rules";
import { KeyRing, parseKeySecret } from "./keys";
import { LIMITS, ONE_DAY_MS } from "./limits";
import type { ObservationRecorderOptions } from "./observations";
import { count, retentionMs } from "./operator-input";
import type { QueueConfig } from "./queue-context";
import { type TelemetryOptions, telemetryProblem } from "./telemetry";

export interface QueueOptions {
  /** Caller-owned pool. `close()` never ends it. */
  pool: pg.Pool;
  /** Largest payload accepted, in bytes of JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Default `source` label for observations. */
  source?: string;
  observations?: ObservationRecorderOptions;
  /**
   * Expired-binding cleanup and observation retention on a timer. Default every 5 minutes with 7 days
   * of observations; `false` turns the timer off (call `runMaintenance()` yourself).
   */
  maintenance?:
    | false
    | { intervalMs?: number; observationRetentionMs?: number; jobRetentionMs?: number; batchSize?: number };
  /** Send a wake-up NOTIFY after accepted jobs commit (coalesced, off the commit path). Default true. */
  notify?: boolean;
  /**
   * Keyed calls through the pool repeat themselves after connection loss or a retryable SQLSTATE
   * (`WorkhorseDatabaseError.retryable`): a keyed request is safe to repeat, so the caller sees one
   * answer. `attempts` is how many times a call is tried in all (1..20, default 12); the wait between
   * tries doubles from 25 ms up to `maxDelayMs` (0..60,000, default 3,000), with jitter: up to about 15 s in all, as long as a restart may take. Never for
   * keyless requests (or a batch holding one), never inside `withClient` (the caller owns that
   * transaction). `false` turns it off. See `retryStats()`.
   */
  retry?: false | { attempts?: number; maxDelayMs?: number };
  /**
   * The installation secret that keys the key hashes, kept outside the database: 64 hex characters
   * or a 32-byte Buffer. Default: `process.env.WORKHORSE_KEY_SECRET`, else the secret that the first
   * `migrate()` stored in `workhorse.installation`. Every process of one installation must use the
   * same secret, or keys stop replaying across them.
   */
  keySecret?: string | Buffer;
  /**
   * Smart batching (docs/enqueue.md, "Concurrent calls share a statement"): at most `maxStatements`
   * enqueue statements of this Queue are in flight at once (1..100; default the pool's `max`, 10
   * when unset); single calls that arrive while all are busy wait and go together, up to `maxCalls`
   * (2..1,000, default 100) in the next statement, as one `workhorse.enqueue_batch`. Each call keeps
   * its own result and errors; a lone call is sent at once. Never inside `withClient` /
   * `transaction`. `false` sends every call as its own statement. See `coalesceStats()`.
   */
  coalesce?: false | { maxStatements?: number; maxCalls?: number };
  /**
   * Metrics and traces (docs/observability.md): by default through the global OpenTelemetry
   * providers, read when the Queue is made (no-ops unless the application installed an SDK).
   * `scopes`: the key scopes to break enqueue decisions out by; no other scope is recorded.
   */
  telemetry?: TelemetryOptions;
}

/** Every `QueueOptions` name: `new Queue` refuses any other (a misspelt option would otherwise do nothing). */
const QUEUE_OPTION_NAMES = {
  pool: true,
  maxPayloadBytes: true,
  source: true,
  observations: true,
  maintenance: true,
  notify: true,
  retry: true,
  keySecret: true,
  coalesce: true,
  telemetry: true,
} as const satisfies Record<keyof QueueOptions, true>;

const OBSERVATION_OPTION_NAMES = {
  maxBuffered: true,
  flushIntervalMs: true,
  batchSize: true,
} as const satisfies Record<keyof ObservationRecorderOptions, true>;

const maintenanceConfigSchema = z.strictObject({
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(ONE_DAY_MS)
    .default(5 * 60_000),
  observationRetentionMs: retentionMs(),
  jobRetentionMs: retentionMs(),
  batchSize: count(100_000).default(1000),
});

/** `Queue({ retry })`: how keyed calls through the pool repeat themselves (see QueueOptions.retry). */
const retryConfigSchema = z.strictObject({
  attempts: z.number().int().min(1).max(20).default(12),
  maxDelayMs: z.number().int().min(0).max(60_000).default(3000),
});

/** `Queue({ coalesce })`: see QueueOptions.coalesce. */
const coalesceConfigSchema = z.strictObject({
  maxStatements: z.number().int().min(1).max(100).optional(),
  maxCalls: z.number().int().min(2).max(1000).default(100),
});

/** The options of `new Queue` checked and defaulted; throws `EnqueueValidationError` naming each bad one. */
export function queueSettings(options: QueueOptions): QueueConfig {
  if (!options || typeof options.pool?.connect !== "function") {
    throw new EnqueueValidationError([{ option: "pool", rule: "must be a pg.Pool" }]);
  }
  const unknown = [
    ...unknownOptionNames(options, QUEUE_OPTION_NAMES),
    ...(options.observations && typeof options.observations === "object"
      ? unknownOptionNames(options.observations, OBSERVATION_OPTION_NAMES).map((n) => `observations.${n}`)
      : []),
  ];
  if (unknown.length > 0) {
    throw new EnqueueValidationError(unknown.map((option) => ({ option, rule: "is not a known option" })));
  }
  const maxPayloadBytes = options.maxPayloadBytes ?? LIMITS.defaultPayloadBytes;
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 2 || maxPayloadBytes > 256 * 1024 * 1024) {
    throw new EnqueueValidationError([{ option: "maxPayloadBytes", rule: "must be an integer 2..268435456" }]);
  }
  const maintenance =
    options.maintenance === false ? false : parseOptions(maintenanceConfigSchema, options.maintenance, "maintenance");
  const retry = options.retry === false ? false : parseOptions(retryConfigSchema, options.retry, "retry");
  const coalesce =
    options.coalesce === false ? false : parseOptions(coalesceConfigSchema, options.coalesce, "coalesce");
  const source = options.source === undefined ? null : sourceLabel.safeParse(options.source);
  const outside = options.keySecret ?? process.env.WORKHORSE_KEY_SECRET;
  const keySecret = outside === undefined || outside === "" ? null : parseKeySecret(outside);
  if (outside !== undefined && outside !== "" && !keySecret) {
    throw new EnqueueValidationError([
      {
        option: options.keySecret === undefined ? "WORKHORSE_KEY_SECRET" : "keySecret",
        rule: "must be 64 hexadecimal characters (32 bytes), e.g. from `openssl rand -hex 32`",
      },
    ]);
  }
  const telemetry = telemetryProblem(options.telemetry);
  if (telemetry) throw new EnqueueValidationError([{ option: "telemetry", rule: telemetry }]);
  if (source && !source.success) {
    throw new EnqueueValidationError([{ option: "source", rule: source.error.issues[0]?.message ?? "is invalid" }]);
  }
  return {
    maxPayloadBytes,
    source: source ? source.data : null,
    notify: options.notify ?? true,
    keys: new KeyRing(keySecret),
    maintenance,
    retry,
    coalesce: coalesce && {
      maxStatements: coalesce.maxStatements ?? options.pool.options?.max ?? 10,
      maxCalls: coalesce.maxCalls,
    },
    telemetry: options.telemetry ?? {},
  };
}
