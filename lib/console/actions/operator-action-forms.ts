import "server-only";
import {
  EnqueueValidationError,
  JobNotFoundError,
  LIMITS,
  MAX_JOB_IDS,
  type Queue,
  RedriveIdempotencyConflictError,
  type Unchanged,
} from "@workhorse/core";
/**
 * Operator actions of the console (cancel, run now, redrive, pause, resume): parse the form with zod,
 * call lib/enqueue with the session's actor, and return a typed state. The actor never comes from
 * the form. Every expected failure is a returned value.
 */
import { z } from "zod";
import { parseJobFilters } from "../reads/filters";
import { MAX_BULK_JOBS, matchingJobIds } from "../reads/operator-reads";
import type { Sql } from "../reads/read-queries";
import type { FieldErrors, OperatorActionState, RedriveState } from "../wire/action-state";

const reason = z
  .string({ error: "Give a reason: it is kept in the job's timeline and in the audit log" })
  .trim()
  .min(1, { error: "Give a reason: it is kept in the job's timeline and in the audit log" })
  .max(LIMITS.reasonChars, { error: `Reason must be at most ${LIMITS.reasonChars} characters` });

const jobIds = z
  .array(z.uuid({ error: "Not a job id" }))
  .min(1, { error: "Select at least one job" })
  .max(MAX_JOB_IDS, { error: `At most ${MAX_JOB_IDS} jobs at once` });

const queueForm = z.object({ queue: z.string().trim().min(1, { error: "Queue is required" }).max(128), reason });
const redriveForm = z.object({
  jobIds,
  reason,
  requestId: z.string().regex(/^[A-Za-z0-9-]{8,64}$/, { error: "The form is stale: open it again" }),
  mode: z.enum(["dry-run", "redrive"]),
});

let seqCounter = 0;

function errorsOf(error: z.ZodError): FormError {
  const fieldErrors: FieldErrors = {};
  for (const i of error.issues) fieldErrors[String(i.path[0] ?? "form")] ??= i.message;
  return { status: "error", message: fieldErrors.jobIds ?? "Check the highlighted fields.", fieldErrors };
}
type FormError = { status: "error"; message: string; fieldErrors: FieldErrors };

/** `jobIds` may come as repeated fields or one comma/space separated field (a selection). */
function idsOf(form: FormData): string[] {
  return form
    .getAll("jobIds")
    .flatMap((v) => (typeof v === "string" ? v.split(/[\s,]+/) : []))
    .filter(Boolean)
    .map((s) => s.toLowerCase());
}

const text = (v: FormDataEntryValue | null) => (typeof v === "string" ? v : "");

const STATE_WORDS: Record<string, string> = {
  missing: "no longer exist",
  scheduled: "scheduled",
  ready: "ready",
  active: "active",
  succeeded: "already succeeded",
  failed: "already failed",
  canceled: "already canceled",
  purged: "purged",
};

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "2 already succeeded, 1 no longer exist" or "" */
function describeUnchanged(unchanged: Unchanged): string {
  return Object.entries(unchanged)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([state, n]) => `${n} ${STATE_WORDS[state] ?? state}`)
    .join(", ");
}

function unchangedCounts(u: Unchanged): Record<string, number> {
  return Object.fromEntries(Object.entries(u).map(([k, v]) => [`unchanged.${k}`, v ?? 0]));
}

function refusalOf(err: unknown): { status: "refused"; message: string } | FormError | null {
  if (err instanceof JobNotFoundError) return { status: "refused", message: err.message };
  if (err instanceof RedriveIdempotencyConflictError) return { status: "refused", message: err.message };
  if (err instanceof EnqueueValidationError) {
    return { status: "error", message: `${err.option}: ${err.rule}`, fieldErrors: {} };
  }
  return null;
}

const bulkIds = z
  .array(z.uuid({ error: "Not a job id" }))
  .min(1, { error: "Select at least one job" })
  .max(MAX_BULK_JOBS, { error: `At most ${MAX_BULK_JOBS} jobs at once` });

/**
 * The jobs an action applies to: the `jobIds` fields (a selection), or with `all=1` every job
 * matching the jobs list's filter fields (`queue`, `type`, `state`, `tag`, `error`, `due`, through the same
 * allowlist as the page), newest first, at most MAX_BULK_JOBS.
 */
async function selectionOf(form: FormData, db: Sql | null): Promise<string[]> {
  if (text(form.get("all")) === "1" && db) {
    const f = parseJobFilters({
      queue: text(form.get("queue")),
      type: text(form.get("type")),
      state: text(form.get("state")),
      tag: text(form.get("tag")),
      error: text(form.get("error")),
      due: text(form.get("due")),
    });
    return matchingJobIds(db, { queue: f.queue, type: f.type, state: f.state, tag: f.tag, error: f.error, due: f.due });
  }
  return idsOf(form);
}

function chunks<T>(xs: T[], n = MAX_JOB_IDS): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

function addUnchanged(into: Unchanged, more: Unchanged) {
  for (const [k, v] of Object.entries(more)) {
    const key = k as keyof Unchanged;
    into[key] = (into[key] ?? 0) + (v ?? 0);
  }
}

/** What one bulk core call returns: counters, and the jobs it left alone by state. */
type BulkCounts<K extends string> = Record<K, number> & { unchanged: Unchanged };

/**
 * The shape every bulk action shares: parse the selection and the reason, call the core in chunks
 * of at most MAX_JOB_IDS ids, add the counters up, and say what changed and what did not.
 */
async function bulkAction<K extends string>(
  form: FormData,
  db: Sql | null,
  counters: readonly K[],
  call: (jobIds: string[], reason: string) => Promise<BulkCounts<K>>,
  summary: (totals: Record<K, number>, rest: string) => string,
): Promise<OperatorActionState> {
  const parsed = z
    .object({ jobIds: bulkIds, reason })
    .safeParse({ jobIds: await selectionOf(form, db), reason: text(form.get("reason")) });
  if (!parsed.success) return errorsOf(parsed.error);
  try {
    const totals = Object.fromEntries(counters.map((k) => [k, 0])) as Record<K, number>;
    const unchanged: Unchanged = {};
    for (const ids of chunks(parsed.data.jobIds)) {
      const r = await call(ids, parsed.data.reason);
      for (const k of counters) totals[k] += r[k];
      addUnchanged(unchanged, r.unchanged);
    }
    return {
      status: "done",
      summary: summary(totals, describeUnchanged(unchanged)),
      counts: { ...totals, ...unchangedCounts(unchanged) },
      seq: ++seqCounter,
    };
  } catch (err) {
    const r = refusalOf(err);
    if (r) return r;
    throw err;
  }
}

/**
 * A bulk action as the console calls it: with the queue, the session's actor, the form, and `db` to
 * resolve "all matching this filter" selections.
 */
function bulkJobAction<K extends string>(
  call: (
    queue: Queue,
    selection: { jobIds: string[] },
    context: { actor: string; reason: string },
  ) => Promise<BulkCounts<K>>,
  counters: readonly K[],
  summary: (totals: Record<K, number>, rest: string) => string,
) {
  return (queue: Queue, actor: string, form: FormData, db: Sql | null = null): Promise<OperatorActionState> =>
    bulkAction(form, db, counters, (jobIds, reason) => call(queue, { jobIds }, { actor, reason }), summary);
}

/**
 * Cancel the selected jobs (pending ones at once, active ones at their worker's next heartbeat), in
 * calls of at most 1,000 ids.
 */
export const cancelJobs = bulkJobAction(
  (queue, selection, context) => queue.cancel(selection, context),
  ["canceled", "cancelRequested"],
  ({ canceled, cancelRequested }, rest) => {
    const parts = [`Canceled ${plural(canceled, "job")}`];
    if (cancelRequested > 0) {
      parts.push(`asked the workers of ${plural(cancelRequested, "active job")} to stop at their next heartbeat`);
    }
    return `${parts.join("; ")}.${rest ? ` Not changed: ${rest}.` : ""}`;
  },
);

/** Make the selected scheduled jobs ready now, in calls of at most 1,000 ids. */
export const runJobsNow = bulkJobAction(
  (queue, selection, context) => queue.runNow(selection, context),
  ["updated"],
  ({ updated }, rest) =>
    `${plural(updated, "scheduled job")} now ready to run.${rest ? ` Not changed (only scheduled jobs can run now): ${rest}.` : ""}`,
);

/** Purge the selected pending jobs (tombstones; their keys are released), in calls of at most 1,000 ids. */
export const purgeSelected = bulkJobAction(
  (queue, selection, context) => queue.purgeJobs(selection, context),
  ["purged", "releasedBindings"],
  ({ purged, releasedBindings }, rest) =>
    `Purged ${plural(purged, "job")}; released ${plural(releasedBindings, "binding")}.${rest ? ` Not changed (only ready and scheduled jobs can be purged): ${rest}.` : ""}`,
);

/** What happened to `n` jobs of one redrive status, the verb agreeing with `n`. */
const REDRIVE_WORDS: Record<string, (n: number) => string> = {
  redriven: (n) => `${n} redriven`,
  replayed: (n) => `${n} already redriven by this request`,
  already_redriven: (n) =>
    n === 1
      ? "1 was redriven before and is left alone (redrive again to run it once more)"
      : `${n} were redriven before and are left alone (redrive again to run them once more)`,
  eligible: (n) => `${n} would be redriven`,
  not_found: (n) => (n === 1 ? "1 no longer exists" : `${n} no longer exist`),
  not_failed: (n) => (n === 1 ? "1 is not failed" : `${n} are not failed`),
};

/**
 * A redrive's summary from its counts per status: "3 jobs redriven.", "2 jobs redriven; 1 was
 * redriven before and is left alone (…)." or, for a dry run, "Dry run, nothing changed: 2 would be
 * redriven, 1 is not failed." The redriven jobs (new or replayed) are counted once, in the lead.
 */
export function redriveSummary(counts: Record<string, number>, dryRun: boolean): string {
  const words = (statuses: [string, number][]) =>
    statuses.map(([s, n]) => REDRIVE_WORDS[s]?.(n) ?? `${n} ${s.replaceAll("_", " ")}`).join(", ");
  const all = Object.entries(counts).filter(([, n]) => n > 0);
  if (dryRun) return `Dry run, nothing changed: ${words(all) || "no job"}.`;
  const redriven = (counts.redriven ?? 0) + (counts.replayed ?? 0);
  const lead = `${plural(redriven, "job")} redriven${counts.replayed ? ` (${counts.replayed} already by this request)` : ""}`;
  const rest = words(all.filter(([s]) => s !== "redriven" && s !== "replayed"));
  return `${lead}${rest ? `; ${rest}` : ""}.`;
}

/** Most jobs one group redrive takes (newest first); the dialog says so when a group is larger. */
export const MAX_GROUP_REDRIVE = 10_000;

/** The failed jobs of one dead-letter group (queue, type, error name), newest first, at most MAX_GROUP_REDRIVE. */
export async function groupJobIds(queue: Queue, form: FormData): Promise<string[]> {
  const filter = {
    queue: text(form.get("groupQueue")),
    type: text(form.get("groupType")),
    errorName: text(form.get("groupErrorName")),
  };
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    // Redriven ones too: the core answers them `already_redriven` (naming their redriven job), and a
    // double submit of the same dialog still replays every job the first submit redrove.
    const page = await queue.listDeadLetters({
      ...filter,
      limit: 500,
      includeRedriven: true,
      ...(cursor ? { cursor } : {}),
    });
    for (const j of page.jobs) ids.push(j.id);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && ids.length < MAX_GROUP_REDRIVE);
  return ids.slice(0, MAX_GROUP_REDRIVE);
}

/**
 * Redrive failed jobs: the `jobIds` given, or (with `group=1`) every failed job of one dead-letter
 * group, in calls of at most 1,000 ids sharing one request id. `mode=dry-run` only says what would
 * happen. The request id comes from the form, so a double submit replays instead of redriving twice.
 */
export async function redriveJobs(
  queue: Queue,
  actor: string,
  form: FormData,
  db: Sql | null = null,
): Promise<RedriveState> {
  const group = text(form.get("group")) === "1";
  const all = text(form.get("all")) === "1";
  let selected: string[];
  try {
    selected = group ? await groupJobIds(queue, form) : await selectionOf(form, db);
  } catch (err) {
    const r = refusalOf(err);
    if (r) return r;
    throw err;
  }
  if (group && selected.length === 0) {
    return { status: "refused", message: "This group has no failed jobs any more: nothing to redrive." };
  }
  if (all && selected.length === 0) {
    return { status: "refused", message: "No jobs match this filter any more: nothing to redrive." };
  }
  const many = group || all;
  const parsed = redriveForm.safeParse({
    jobIds: many ? selected.slice(0, MAX_JOB_IDS) : selected,
    reason: text(form.get("reason")),
    requestId: text(form.get("requestId")),
    mode: text(form.get("mode")) || "redrive",
  });
  if (!parsed.success) return errorsOf(parsed.error);
  const dryRun = parsed.data.mode === "dry-run";
  const everyId = many ? selected : parsed.data.jobIds;
  try {
    const results: Awaited<ReturnType<Queue["redrive"]>>["results"] = [];
    for (const ids of chunks(everyId)) {
      const r = await queue.redrive({
        jobIds: ids,
        requestId: parsed.data.requestId,
        requestedBy: actor,
        reason: parsed.data.reason,
        dryRun,
        again: text(form.get("again")) === "1",
      });
      results.push(...r.results);
    }
    const r = { results };
    const counts: Record<string, number> = {};
    for (const x of r.results) counts[x.status] = (counts[x.status] ?? 0) + 1;
    return {
      status: "done",
      dryRun,
      summary: redriveSummary(counts, dryRun),
      counts,
      results: r.results.map((x) => ({ sourceJobId: x.sourceJobId, status: x.status, jobId: x.jobId ?? null })),
      seq: ++seqCounter,
    };
  } catch (err) {
    const r = refusalOf(err);
    if (r) return r;
    throw err;
  }
}

/** Pause (`action=pause`) or resume (`action=resume`) one queue. */
export async function setQueuePaused(queue: Queue, actor: string, form: FormData): Promise<OperatorActionState> {
  const parsed = queueForm.safeParse({ queue: text(form.get("queue")), reason: text(form.get("reason")) });
  if (!parsed.success) return errorsOf(parsed.error);
  const pause = text(form.get("action")) !== "resume";
  const { queue: name, reason: why } = parsed.data;
  try {
    if (pause) {
      const r = await queue.pauseQueue(name, { actor, reason: why });
      return {
        status: "done",
        summary: r.paused
          ? `Paused queue ${name}: workers claim nothing from it until it is resumed.`
          : `Queue ${name} was already paused; nothing changed.`,
        counts: { paused: r.paused ? 1 : 0 },
        seq: ++seqCounter,
      };
    }
    const r = await queue.resumeQueue(name, { actor, reason: why });
    return {
      status: "done",
      summary: r.resumed ? `Resumed queue ${name}.` : `Queue ${name} was not paused; nothing changed.`,
      counts: { resumed: r.resumed ? 1 : 0 },
      seq: ++seqCounter,
    };
  } catch (err) {
    const r = refusalOf(err);
    if (r) return r;
    throw err;
  }
}
