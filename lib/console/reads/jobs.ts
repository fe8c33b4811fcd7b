import "server-only";
import type pg from "pg";
import {
  BINDING_COLUMNS,
  type BindingRow,
  bindingFromRow,
  selectJobDetail,
  jobExists as selectJobExists,
  selectJobPayload,
  sqlOf,
} from "@/lib/store/console/core";
import {
  addStateTab,
  type JobListRow,
  jobBaseWhere,
  jobFilterWhere,
  jobListRows,
  jobStateCounts,
  prefixPattern,
} from "@/lib/store/console/lists";
import { jobsEstimate, trustedJobsEstimate } from "@/lib/store/console/reads";
import { dbNow } from "@/lib/store/console/status";
import {
  type BindingDto,
  type JobDetailDto,
  type JobRowDto,
  type Page,
  type PayloadPreview,
  STATE_TABS,
  type StateTab,
  type StateTabCounts,
  type TabCount,
} from "../wire/types";
import type { JobFilters } from "./filters";
import { stateCounts } from "./overview";
import { iso, isoOrNull, readWithTimeout, type Sql } from "./read-queries";

const JOBS_PAGE_SIZE = 50;

function toRow(r: JobListRow): JobRowDto {
  return {
    id: r.id,
    queue: r.queue,
    type: r.type,
    state: r.state,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    tags: r.tags,
    runAt: iso(r.run_at),
    createdAt: iso(r.created_at),
    hasError: r.has_error,
  };
}

/**
 * Newest first, keyset-paginated on the primary key (job ids are UUIDv7, so id order is creation
 * order): `after` = older than that id, `before` = newer. No OFFSET, no count.
 */
export { jobFilterWhere, prefixPattern };

/** Whether a job with this id exists (the jobs page's "open by id" box); `id` must be a UUID. */
export async function jobExists(db: Sql, id: string): Promise<boolean> {
  return selectJobExists(sqlOf(db), id);
}

export async function listJobs(db: Sql, f: JobFilters, limit = JOBS_PAGE_SIZE): Promise<Page<JobRowDto>> {
  const backwards = !f.after && !!f.before;
  const rows = await jobListRows(db, f, limit);
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (backwards) page.reverse();
  const dtos = page.map(toRow);
  const now = rows[0]?.now ? iso(rows[0].now) : new Date().toISOString();
  if (backwards) {
    return { rows: dtos, prev: more ? (dtos[0]?.id ?? null) : null, next: dtos.at(-1)?.id ?? f.before ?? null, now };
  }
  return {
    rows: dtos,
    next: more ? (dtos.at(-1)?.id ?? null) : null,
    prev: f.after ? (dtos[0]?.id ?? f.after) : null,
    now,
  };
}

export { BINDING_COLUMNS, type BindingRow };

/** The core's mapping of a binding row, with dates as ISO strings and the max-wait deadline added. */
export function bindingDto(r: BindingRow): BindingDto {
  const b = bindingFromRow(r);
  return {
    ...b,
    createdAt: iso(b.createdAt),
    expiresAt: b.expiresAt ? iso(b.expiresAt) : null,
    ...debounceFields(b.createdAt, b.schedule, b.maxWaitMs),
  };
}

/** A binding's debounce settings, with the max-wait deadline (first acceptance + maxWaitMs). */
export function debounceFields(
  createdAt: Date,
  schedule: "reset" | "preserve" | null,
  maxWaitMs: number | null,
): Pick<BindingDto, "schedule" | "maxWaitMs" | "maxWaitUntil"> {
  return {
    schedule,
    maxWaitMs,
    maxWaitUntil: maxWaitMs === null ? null : iso(new Date(createdAt.getTime() + maxWaitMs)),
  };
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v, null, 2));

/** One job with the binding it owns and its timeline (store/core/jobs.ts `selectJobDetail`), for the job page. Null when unknown. */
export async function jobDetail(db: Sql, id: string): Promise<JobDetailDto | null> {
  const detail = await selectJobDetail(sqlOf(db), id);
  if (!detail) return null;
  const { job: j, binding, events } = detail;
  return {
    id: j.id,
    queue: j.queue,
    type: j.type,
    state: j.state,
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    tags: j.tags,
    runAt: iso(j.runAt),
    createdAt: iso(j.createdAt),
    updatedAt: iso(j.updatedAt),
    startedAt: isoOrNull(j.startedAt),
    finishedAt: isoOrNull(j.finishedAt),
    deadline: isoOrNull(j.deadline),
    executionTimeoutMs: j.executionTimeoutMs,
    concurrencyKey: j.concurrencyKey ?? null,
    retryPolicy: j.retryPolicy ?? null,
    leaseOwner: j.leaseOwner ?? null,
    leaseExpiresAt: isoOrNull(j.leaseExpiresAt),
    lastErrorJson: json(j.lastError),
    resultJson: json(j.result),
    purgedAt: isoOrNull(j.purgedAt),
    purgedBy: j.purgedBy ?? null,
    purgeReason: j.purgeReason ?? null,
    cancelRequestedAt: isoOrNull(j.cancelRequestedAt),
    cancelRequestedBy: j.cancelRequestedBy ?? null,
    redrivenFrom: j.redrivenFrom,
    redriveJobIds: j.redriveJobIds,
    binding: binding ? bindingDto(binding) : null,
    events: withOriginalRequest(events.map((e) => ({ seq: Number(e.seq), at: iso(e.at), kind: e.kind, data: e.data }))),
    now: iso(detail.now),
  };
}

/**
 * A debounced job's columns hold its latest request, so the `enqueued` entry made from them named the
 * latest request digest while the first `debounced` entry names the original as prior. The entry
 * says what was enqueued: the first replacement's prior digest.
 */
function withOriginalRequest(events: JobDetailDto["events"]): JobDetailDto["events"] {
  const first = events.find((e) => e.kind === "debounced")?.data as { priorRequestDigest?: unknown } | null;
  const prior = first?.priorRequestDigest;
  if (typeof prior !== "string") return events;
  return events.map((e) =>
    e.kind === "enqueued" && e.data && typeof e.data === "object" && "requestDigest" in e.data
      ? { ...e, data: { ...(e.data as object), requestDigest: prior } }
      : e,
  );
}

/** The most of a payload's pretty JSON the job page shows inline; the rest is a download. */
export const PAYLOAD_PREVIEW_CHARS = 16_384;

/** The whole payload as pretty JSON (the download), or null when no job has this id. */
export async function jobPayloadJson(db: Sql, id: string): Promise<string | null> {
  const row = await selectJobPayload(sqlOf(db), id);
  return row ? JSON.stringify(row.payload, null, 2) : null;
}

/** The job page's payload: read once with the page (never by its live refresh), a bounded preview. */
export async function jobPayload(db: Sql, id: string): Promise<PayloadPreview | null> {
  const text = await jobPayloadJson(db, id);
  if (text === null) return null;
  return {
    preview: text.slice(0, PAYLOAD_PREVIEW_CHARS),
    truncated: text.length > PAYLOAD_PREVIEW_CHARS,
    bytes: Buffer.byteLength(text),
  };
}

/** Above this many matching rows the state tabs show the planner's estimate instead of a count. */
const EXACT_COUNT_LIMIT = 50_000;
/** The exact tab count is one scan; past this it gives way to estimates. */
const TAB_COUNT_TIMEOUT_MS = 1_000;

/**
 * Counts for the jobs page's state tabs under the current filters (the state tab itself aside).
 * - Queue filter only (or none): summed from the shared per-queue state counts (exact, at most 15 s
 *   old), the queue filter being a prefix over queue names.
 * - Other filters: when the planner expects at most EXACT_COUNT_LIMIT matching jobs, one grouped
 *   count under a statement timeout; otherwise (or on timeout) the planner's estimate per tab,
 *   marked as estimated. Either way the tabs cost a bounded amount however big the table is.
 */
export async function stateTabCounts(pool: pg.Pool, f: JobFilters): Promise<StateTabCounts> {
  const exact = (value: number): TabCount => ({ value, estimated: false });
  const empty = () =>
    Object.fromEntries(["all", ...STATE_TABS].map((k) => [k, exact(0)])) as Record<StateTab | "all", TabCount>;
  if (!f.type && !f.tag && !f.error && !f.due) {
    const sc = await stateCounts(pool);
    const counts = empty();
    for (const r of sc.rows) {
      if (f.queue && !r.queue.startsWith(f.queue)) continue;
      counts[r.state].value += r.n;
      counts.retrying.value += r.retrying;
      counts.all.value += r.n;
    }
    return { counts, now: sc.asOf };
  }
  const w = jobBaseWhere(f);
  const estimate = async (extra?: StateTab) => {
    const we = jobBaseWhere(f);
    if (extra) addStateTab(we, extra);
    return jobsEstimate(pool, we);
  };
  const estimated = async (): Promise<StateTabCounts> => {
    const counts = empty();
    const values = await Promise.all(
      ["all", ...STATE_TABS].map((k) => estimate(k === "all" ? undefined : (k as StateTab))),
    );
    ["all", ...STATE_TABS].forEach((k, i) => {
      counts[k as StateTab | "all"] = { value: values[i] ?? 0, estimated: true };
    });
    return { counts, now: iso((await dbNow(pool)) ?? new Date()) };
  };
  // Where the planner's estimate means something (not on Citus), a large one skips the exact count;
  // otherwise the exact count under the statement timeout decides alone.
  if (((await trustedJobsEstimate(pool, w)) ?? 0) > EXACT_COUNT_LIMIT) return estimated();
  const r = await readWithTimeout(pool, TAB_COUNT_TIMEOUT_MS, (client) => jobStateCounts(client, f));
  if (r.timedOut) return estimated();
  const counts = empty();
  for (const row of r.value.rows) {
    counts[row.state].value = Number(row.n);
    counts.retrying.value += Number(row.retrying);
    counts.all.value += Number(row.n);
  }
  return { counts, now: iso(r.value.rows[0]?.now ?? new Date()) };
}
