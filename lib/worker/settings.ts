/** `new Worker(options)`'s options checked and defaulted (docs/worker.md, "Options"). */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { normalizeRetryPolicy } from "../enqueue/enqueue-input";
import { WorkerConfigError } from "../enqueue/errors";
import { unknownOptionNames } from "../enqueue/input-rules";
import { DEFAULT_QUEUE, DEFAULT_RETRY_POLICY, LIMITS, ONE_DAY_MS, ONE_YEAR_MS } from "../enqueue/limits";
import { telemetryProblem } from "../enqueue/telemetry";
import type { NormalizedRetryPolicy } from "../enqueue/types";
import type { JobHandler, WorkerOptions } from "./types";

function int(option: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new WorkerConfigError(option, `must be an integer ${min}..${max} (got ${String(value)})`);
  }
  return v;
}

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
  telemetry: true,
} as const satisfies Record<keyof WorkerOptions, true>;

/**
 * `new Worker(options)`'s options checked and defaulted (bounds in docs/worker.md). Throws
 * `WorkerConfigError` naming the option and its rule.
 */
export type WorkerSettings = ReturnType<typeof workerSettings>;

export function workerSettings(options: WorkerOptions) {
  if (!options || typeof options.pool?.connect !== "function") throw new WorkerConfigError("pool", "must be a pg.Pool");
  const [unknown] = unknownOptionNames(options, WORKER_OPTION_NAMES);
  if (unknown !== undefined) throw new WorkerConfigError(unknown, "is not a known option");
  const telemetry = telemetryProblem(options.telemetry);
  if (telemetry) throw new WorkerConfigError("telemetry", telemetry);
  const pool = options.pool;
  const queues = options.queues ?? [DEFAULT_QUEUE];
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
  const leaseMs = int("leaseMs", options.leaseMs, 30_000, 200, ONE_DAY_MS);
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
    if (!Number.isInteger(v) || v < 0 || v > ONE_YEAR_MS) {
      throw new WorkerConfigError(`defaultRetryPolicy.${k}`, `must be an integer 0..${ONE_YEAR_MS}`);
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
