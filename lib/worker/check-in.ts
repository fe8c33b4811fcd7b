/**
 * The worker's own row in `workhorse.worker_heartbeat` (what the console's Workers page lists):
 * written when it starts and every heartbeat interval, marked `stopping` while it shuts down, deleted
 * once it has stopped. A check-in that fails is reported and skipped; the next one tries again, and
 * a worker that misses three in a row shows as gone.
 */
import { hostname } from "node:os";
import type pg from "pg";
import * as sql from "../store/worker/claims";

/** At most this many of the held job ids go into a check-in. */
const JOB_IDS_PER_CHECK_IN = 20;

export interface CheckInDeps {
  pool: pg.Pool;
  workerId: string;
  queues: string[];
  types: string[] | null;
  concurrency: number;
  heartbeatIntervalMs: number;
  /** Attempts whose handler runs, and the ids of every attempt held. */
  snapshot: () => { running: number; jobIds: string[] };
  report: (err: unknown) => void;
}

export class CheckIns {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private status: "running" | "stopping" = "running";
  private startedAt = new Date();

  constructor(private readonly deps: CheckInDeps) {}

  start(): void {
    this.startedAt = new Date();
    void this.send();
    this.timer = setInterval(() => void this.send(), this.deps.heartbeatIntervalMs);
    this.timer.unref();
  }

  /** Shutdown began: says so at once (the row stays until `stop`). */
  stopping(): void {
    this.status = "stopping";
    void this.send();
  }

  /** No more check-ins; the row is deleted. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
    try {
      await sql.checkOut(this.deps.pool, this.deps.workerId);
    } catch (err) {
      this.deps.report(err); // the row ages out as gone instead
    }
  }

  /** One check-in (skipped while the last one is in flight). */
  private send(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const d = this.deps;
    const { running, jobIds } = d.snapshot();
    this.inFlight = sql
      .checkIn(d.pool, {
        workerId: d.workerId,
        host: hostname(),
        pid: process.pid,
        queues: d.queues,
        types: d.types,
        concurrency: d.concurrency,
        running,
        held: jobIds.length,
        jobIds: [...new Set(jobIds)].slice(0, JOB_IDS_PER_CHECK_IN),
        intervalMs: d.heartbeatIntervalMs,
        status: this.status,
        startedAt: this.startedAt,
      })
      .catch((err) => d.report(err))
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }
}
