import "server-only";
import type pg from "pg";
import { BINDING_COLUMNS, type BindingRow, bindingFromRow } from "@/lib/enqueue";
import { jobsEstimate, trustedJobsEstimate } from "@/lib/enqueue/store/console-reads";
import { selectJobDetail, jobExists as selectJobExists } from "@/lib/enqueue/store/jobs";
import { sqlOf } from "@/lib/enqueue/store/layout";
import { type JobFilters, STATE_TABS, type StateTab } from "./filters";
import { stateCounts } from "./overview";
import { type Db, iso, isoOrNull, readWithTimeout, Where } from "./read-queries";
import type { BindingDto, JobDetailDto, JobRowDto, JobStateName, Page, TabCount } from "./wire-types";

const JOBS_PAGE_SIZE = 50;

interface JobListRow {
  id: string;
  queue: string;
  type: string;
  state: JobStateName;
  attempt: number;
  max_attempts: number;
  tags: string[];
  run_at: Date;
  created_at: Date;
  has_error: boolean;
  now: Date;
}

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
/** `LIKE` pattern for "starts with": the value's own `%`, `_` and `\` match literally. */
export function prefixPattern(s: string): string {
  return `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The filters other than the state tab and the cursor. */
function baseWhere(f: JobFilters): Where {
  const w = new Where();
  if (f.queue) w.add((p) => `queue like ${p}`, prefixPattern(f.queue));
  if (f.type) w.add((p) => `type like ${p}`, prefixPattern(f.type));
  if (f.tag) w.add((p) => `exists (select 1 from unnest(tags) t where t like ${p})`, prefixPattern(f.tag));
  if (f.error) w.raw("last_error is not null");
  return w;
}

function addState(w: Where, state: StateTab): void {
  if (state === "retrying") w.raw("state = 'scheduled' and last_error is not null");
  else w.add((p) => `state = ${p}`, state);
}

/** The jobs list's filters (queue, type, tag, error, state tab) as a where clause: one definition of "matching this filter". */
export function jobFilterWhere(f: Omit<JobFilters, "after" | "before">): Where {
  const w = baseWhere(f);
  if (f.state) addState(w, f.state);
  return w;
}

/** Whether a job with this id exists (the jobs page's "open by id" box); `id` must be a UUID. */
export async function jobExists(db: Db, id: string): Promise<boolean> {
  return selectJobExists(sqlOf(db), id);
}

export async function listJobs(db: Db, f: JobFilters, limit = JOBS_PAGE_SIZE): Promise<Page<JobRowDto>> {
  const w = jobFilterWhere(f);
  const backwards = !f.after && !!f.before;
  if (f.after) w.add((p) => `id < ${p}::uuid`, f.after);
  else if (f.before) w.add((p) => `id > ${p}::uuid`, f.before);
  const { rows } = await db.query<JobListRow>(
    `select id, queue, type, state, attempt, max_attempts, tags, run_at, created_at,
            last_error is not null as has_error, now() as now
       from workhorse.job ${w} order by id ${backwards ? "asc" : "desc"} limit ${limit + 1}`,
    w.values,
  );
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
    expiresAt: iso(b.expiresAt),
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

/** One job with the binding it owns and its timeline (store/jobs.ts `selectJobDetail`), for the job page. Null when unknown. */
export async function jobDetail(db: Db, id: string): Promise<JobDetailDto | null> {
  const detail = await selectJobDetail(sqlOf(db), id);
  if (!detail) return null;
  const { job: j, binding, events } = detail;
  return {
    id: j.id,
    queue: j.queue,
    type: j.type,
    state: j.state,
    payloadJson: JSON.stringify(j.payload, null, 2),
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
    events: events.map((e) => ({ seq: Number(e.seq), at: iso(e.at), kind: e.kind, data: e.data })),
    now: iso(detail.now),
  };
}

/** Above this many matching rows the state tabs show the planner's estimate instead of a count. */
const EXACT_COUNT_LIMIT = 50_000;
/** The exact tab count is one scan; past this it gives way to estimates. */
const TAB_COUNT_TIMEOUT_MS = 1_000;

export interface StateTabCounts {
  counts: Record<StateTab | "all", TabCount>;
  now: string;
}

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
  if (!f.type && !f.tag && !f.error) {
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
  const w = baseWhere(f);
  const estimate = async (extra?: StateTab) => {
    const we = baseWhere(f);
    if (extra) addState(we, extra);
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
    const { rows } = await pool.query<{ now: Date }>("select now() as now");
    return { counts, now: iso(rows[0]?.now ?? new Date()) };
  };
  // Where the planner's estimate means something (not on Citus), a large one skips the exact count;
  // otherwise the exact count under the statement timeout decides alone.
  if (((await trustedJobsEstimate(pool, w)) ?? 0) > EXACT_COUNT_LIMIT) return estimated();
  const r = await readWithTimeout(pool, TAB_COUNT_TIMEOUT_MS, (client) =>
    client.query<{ state: JobStateName; n: string; retrying: string; now: Date }>(
      `select state, count(*)::text as n, count(*) filter (where state = 'scheduled' and failed)::text as retrying,
              now() as now
         from (select state, last_error is not null as failed from workhorse.job ${w}) s
        group by state`,
      w.values,
    ),
  );
  if (r.timedOut) return estimated();
  const counts = empty();
  for (const row of r.value.rows) {
    counts[row.state].value = Number(row.n);
    counts.retrying.value += Number(row.retrying);
    counts.all.value += Number(row.n);
  }
  return { counts, now: iso(r.value.rows[0]?.now ?? new Date()) };
}
