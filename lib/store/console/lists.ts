/**
 * The console's paged lists and filtered counts (lib/console: jobs.ts, bindings.ts,
 * observation-reads.ts, audit.ts, operator-reads.ts): each filter as a where clause with numbered
 * parameters, and the statements over it. Keyset pagination throughout: no OFFSET.
 */
import type { JobState } from "../../enqueue/types";
import { type Sql, sqlOf } from "../layout";
import { BINDING_COLUMNS, type BindingRow, type ObservationRow } from "../rows";

/** Builds `where` clauses with numbered parameters; column names only ever come from the caller's code. */
export class Where {
  readonly clauses: string[] = [];
  readonly values: unknown[] = [];
  add(sql: (p: string) => string, value: unknown): this {
    this.values.push(value);
    this.clauses.push(sql(`$${this.values.length}`));
    return this;
  }
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  raw(sql: string): this {
    this.clauses.push(sql);
    return this;
  }
  toString(): string {
    return this.clauses.length ? `where ${this.clauses.join(" and ")}` : "";
  }
}

/** `LIKE` pattern for "starts with": the value's own `%`, `_` and `\` match literally. */
export function prefixPattern(s: string): string {
  return `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A bounded count: `select count(*) from (select 1 from <fromWhere> limit cap + 1)`; `capped` past `cap`. */
export async function cappedCount(db: Sql, fromWhere: string, values: unknown[], cap: number) {
  const { rows } = await db.query<{ n: string }>(
    `select count(*)::text as n from (select 1 from ${fromWhere} limit ${cap + 1}) s`,
    values,
  );
  const n = Number(rows[0]?.n ?? 0);
  return n > cap ? { value: cap, capped: true } : { value: n, capped: false };
}

/** The jobs list's state tabs: a job state, or `retrying` (scheduled after a failed attempt). */
export type JobTab = JobState | "retrying";

/** The jobs list's filters: name prefixes, a tag prefix, "has an error", a state tab. */
export interface JobFilter {
  queue?: string;
  type?: string;
  tag?: string;
  error?: boolean;
  /** Only pending jobs whose run time has come (ready, or scheduled and due): what a worker claims next. */
  due?: boolean;
  state?: JobTab;
}

/** The filters other than the state tab. */
export function jobBaseWhere(f: JobFilter): Where {
  const w = new Where();
  if (f.queue) w.add((p) => `queue like ${p}`, prefixPattern(f.queue));
  if (f.type) w.add((p) => `type like ${p}`, prefixPattern(f.type));
  if (f.tag) w.add((p) => `exists (select 1 from unnest(tags) t where t like ${p})`, prefixPattern(f.tag));
  if (f.error) w.raw("last_error is not null");
  if (f.due) w.raw("state in ('ready', 'scheduled') and run_at <= now()");
  return w;
}

/** Adds a state tab to a where clause. */
export function addStateTab(w: Where, state: JobTab): void {
  if (state === "retrying") w.raw("state = 'scheduled' and last_error is not null");
  else w.add((p) => `state = ${p}`, state);
}

/** The jobs list's filters (queue, type, tag, error, state tab) as a where clause: one definition of "matching this filter". */
export function jobFilterWhere(f: JobFilter): Where {
  const w = jobBaseWhere(f);
  if (f.state) addStateTab(w, f.state);
  return w;
}

export interface JobListRow {
  id: string;
  queue: string;
  type: string;
  state: JobState;
  attempt: number;
  max_attempts: number;
  tags: string[];
  run_at: Date;
  created_at: Date;
  has_error: boolean;
  now: Date;
}

/**
 * Jobs matching `f`, keyset-paginated on the primary key (ids are UUIDv7, so id order is creation
 * order): `after` = older than that id (newest first), `before` = newer (oldest first). `limit + 1` rows.
 */
export async function jobListRows(
  db: Sql,
  f: JobFilter & { after?: string; before?: string },
  limit: number,
): Promise<JobListRow[]> {
  const w = jobFilterWhere(f);
  const backwards = !f.after && !!f.before;
  if (f.after) w.add((p) => `id < ${p}::uuid`, f.after);
  else if (f.before) w.add((p) => `id > ${p}::uuid`, f.before);
  if (f.queue && f.state && isRareState(f.state)) {
    const rows = await rareStateQueueRows(db, f.state, f.queue, w, backwards, limit);
    if (rows) return rows;
  }
  const { rows } = await db.query<JobListRow>(
    `select ${JOB_LIST_COLUMNS} from workhorse.job ${w} order by id ${backwards ? "asc" : "desc"} limit ${limit + 1}`,
    w.values,
  );
  return rows;
}

const JOB_LIST_COLUMNS = `id, queue, type, state, attempt, max_attempts, tags, run_at, created_at,
            last_error is not null as has_error, now() as now`;

const RARE_STATES = ["failed", "canceled", "purged"] as const;
type RareState = (typeof RARE_STATES)[number];
const isRareState = (s: JobTab): s is RareState => (RARE_STATES as readonly string[]).includes(s);
/** Most queue names of one rare state the queue-filtered read walks; past it, the plain statement. */
export const RARE_STATE_QUEUE_NAMES = 200;

/**
 * A page of a rare state tab (failed, canceled, purged) under a queue filter, on one node:
 * the state's queue names by a skip scan of job_rare_state_queue_idx (state, queue, id), one probe
 * per name, then the newest `limit + 1` entries of each name matching the prefix, merged in id
 * order. Reads at most (names + 1) probes and `limit + 1` rows per matching name, however many jobs
 * the other queues hold. Null (the caller runs the plain statement) on Citus, which refuses the
 * recursive skip scan, and when the state has more than RARE_STATE_QUEUE_NAMES queue names.
 */
async function rareStateQueueRows(
  db: Sql,
  state: RareState,
  queue: string,
  w: Where,
  backwards: boolean,
  limit: number,
): Promise<JobListRow[] | null> {
  if ((await sqlOf(db).layout()) === "distributed") return null;
  // The state is one of three literals (never input), so the planner sees the partial index's predicate.
  const { rows: names } = await db.query<{ queue: string; matches: boolean }>(
    `with recursive q(queue, n) as (
       (select j.queue, 1 from workhorse.job j where j.state = '${state}' order by j.queue limit 1)
       union all
       select (select j.queue from workhorse.job j where j.state = '${state}' and j.queue > q.queue
                order by j.queue limit 1), q.n + 1
         from q where q.queue is not null and q.n <= $1)
     select queue::text as queue, queue like $2 as matches from q where queue is not null`,
    [RARE_STATE_QUEUE_NAMES, prefixPattern(queue)],
  );
  if (names.length > RARE_STATE_QUEUE_NAMES) return null;
  const matching = names.filter((r) => r.matches).map((r) => r.queue);
  if (!matching.length) return [];
  const dir = backwards ? "asc" : "desc";
  const names$ = w.param(matching);
  const { rows } = await db.query<JobListRow>(
    `select x.* from unnest(${names$}::text[]) q(queue_name)
      cross join lateral (
        select ${JOB_LIST_COLUMNS} from workhorse.job ${w} and state = '${state}' and queue = q.queue_name
         order by id ${dir} limit ${limit + 1}) x
      order by x.id ${dir} limit ${limit + 1}`,
    w.values,
  );
  return rows;
}

/** Jobs matching `f` per state (with `retrying`), one grouped count; run it under a statement timeout. */
export async function jobStateCounts(sql: Sql, f: JobFilter) {
  const w = jobBaseWhere(f);
  return sql.query<{ state: JobState; n: string; retrying: string; now: Date }>(
    `select state, count(*)::text as n, count(*) filter (where state = 'scheduled' and failed)::text as retrying,
              now() as now
         from (select state, last_error is not null as failed from workhorse.job ${w}) s
        group by state`,
    w.values,
  );
}

/** Jobs matching `f`, counted up to `cap`. */
export function countJobs(db: Sql, f: JobFilter, cap: number) {
  const w = jobFilterWhere(f);
  return cappedCount(db, `workhorse.job ${w}`, w.values, cap);
}

/** Ids of the jobs matching `f`, newest first, at most `limit`. */
export async function jobIds(db: Sql, f: JobFilter, limit: number): Promise<string[]> {
  const w = jobFilterWhere(f);
  const { rows } = await db.query<{ id: string }>(
    `select id from workhorse.job ${w} order by id desc limit ${limit}`,
    w.values,
  );
  return rows.map((r) => r.id);
}

/** The keyset cursor of a binding that expires at 'infinity': the largest bigint. */
const INFINITE_US = "9223372036854775807";

/**
 * Live bindings (soonest to expire first) or expired ones awaiting cleanup (oldest first, the order
 * maintenance deletes them in). Walks the `expires_at` index; keyset (expires_at, job_id). `limit + 1` rows.
 */
export async function bindingListRows(
  db: Sql,
  f: { status: "live" | "expired"; scope?: string; mode?: string; after?: { expiresAtUs: string; jobId: string } },
  limit: number,
) {
  const w = new Where();
  w.raw(f.status === "live" ? "expires_at > now()" : "expires_at <= now()");
  if (f.scope) w.add((p) => `scope like ${p}`, prefixPattern(f.scope));
  if (f.mode) w.add((p) => `mode = ${p}`, f.mode);
  if (f.after) {
    const t = w.param(f.after.expiresAtUs);
    const id = w.param(f.after.jobId);
    // A key held without a time limit (docs/enqueue.md, "Key lifetimes") expires at 'infinity',
    // last in this order; its cursor is the largest bigint.
    w.raw(`(expires_at, job_id) > (case when ${t}::bigint = ${INFINITE_US} then 'infinity'::timestamptz
                                        else timestamptz 'epoch' + ${t}::bigint * interval '1 microsecond' end, ${id}::uuid)`);
  }
  const { rows } = await db.query<BindingRow & { now: Date; exp_us: string }>(
    `select ${BINDING_COLUMNS}, now() as now,
            case when expires_at = 'infinity' then '${INFINITE_US}'
                 else (extract(epoch from expires_at) * 1000000)::bigint::text end as exp_us
       from workhorse.key_binding b ${w}
      order by b.expires_at, b.job_id limit ${limit + 1}`,
    w.values,
  );
  return rows;
}

/** The observation log newest first by its identity key, keyset on id; `limit + 1` rows. */
export async function observationListRows(
  db: Sql,
  f: {
    outcome?: string;
    scope?: string;
    queue?: string;
    type?: string;
    digest?: string;
    from?: Date;
    to?: Date;
    sinceMs?: number;
    after?: string;
  },
  limit: number,
) {
  const w = new Where();
  if (f.outcome) w.add((p) => `outcome = ${p}`, f.outcome);
  if (f.scope) w.add((p) => `scope like ${p}`, prefixPattern(f.scope));
  if (f.queue) w.add((p) => `queue like ${p}`, prefixPattern(f.queue));
  if (f.type) w.add((p) => `type like ${p}`, prefixPattern(f.type));
  if (f.digest) w.add((p) => `key_digest = ${p}`, f.digest);
  if (f.from) w.add((p) => `at >= ${p}::timestamptz`, f.from);
  if (f.to) w.add((p) => `at < ${p}::timestamptz`, f.to);
  if (f.sinceMs !== undefined) w.add((p) => `at >= now() - ${p}::bigint * interval '1 millisecond'`, f.sinceMs);
  if (f.after) w.add((p) => `id < ${p}::bigint`, f.after);
  const { rows } = await db.query<ObservationRow & { now: Date }>(
    `select *, now() as now from workhorse.enqueue_observation ${w} order by id desc limit ${limit + 1}`,
    w.values,
  );
  return rows;
}

/** An entry of the operator audit log (`workhorse.operator_audit`). */
export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  /** The configured name of the database the action ran on (null: written outside a console, or before it was recorded). */
  database: string | null;
  target: string;
  reason: string | null;
  result: Record<string, unknown>;
}

/** The operator audit log newest first; keyset on (at, id) over the `at` index (`at` in microseconds); `limit + 1` rows. */
export async function auditListRows(
  db: Sql,
  f: { action?: string; actor?: string; after?: { at: string; id: string } },
  limit: number,
) {
  const w = new Where();
  if (f.action) w.add((p) => `action = ${p}`, f.action);
  if (f.actor) w.add((p) => `actor = ${p}`, f.actor);
  if (f.after) {
    const t = w.param(f.after.at);
    const id = w.param(f.after.id);
    w.raw(`(at, id) < (timestamptz 'epoch' + ${t}::bigint * interval '1 microsecond', ${id}::uuid)`);
  }
  const { rows } = await db.query<AuditRow & { at_us: string; now: Date }>(
    `select id, at, actor, action, database, target, reason, result, now() as now,
            (extract(epoch from at) * 1000000)::bigint::text as at_us from workhorse.operator_audit ${w}
      order by at desc, id desc limit ${limit + 1}`,
    w.values,
  );
  return rows;
}
