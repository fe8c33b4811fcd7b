import "server-only";
import { EnqueueValidationError, LIMITS, MAX_JOB_IDS, type Queue } from "@workhorse/core";
/**
 * Clearing dead letters from the console: the selected failed jobs (`jobIds`) or a whole
 * dead-letter group (`group=1` with `groupQueue`, `groupType`, `groupErrorName`), deleted through
 * `queue.deleteFailedJobs` in calls of at most 1,000 ids, with the operator's reason. Jobs that own a
 * live idempotency key are kept and counted unless the form says `releaseKeys=on`.
 */
import { z } from "zod";
import type { FieldErrors, OperatorActionState } from "../wire/action-state";
import { groupJobIds } from "./operator-action-forms";

const form = z.object({
  jobIds: z
    .array(z.uuid({ error: "Not a job id" }))
    .min(1, { error: "Select at least one job" })
    .max(10_000, { error: "At most 10,000 jobs at once" }),
  reason: z
    .string()
    .trim()
    .min(1, { error: "Give a reason: it is kept in the audit log" })
    .max(LIMITS.reasonChars, { error: `Reason must be at most ${LIMITS.reasonChars} characters` }),
  releaseKeys: z.boolean(),
});

const text = (v: FormDataEntryValue | null) => (typeof v === "string" ? v : "");
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
let seq = 0;

export async function deleteDeadLetters(queue: Queue, actor: string, data: FormData): Promise<OperatorActionState> {
  const group = text(data.get("group")) === "1";
  const ids = group
    ? await groupJobIds(queue, data)
    : data
        .getAll("jobIds")
        .flatMap((v) => (typeof v === "string" ? v.split(/[\s,]+/) : []))
        .filter(Boolean)
        .map((s) => s.toLowerCase());
  if (group && ids.length === 0) {
    return { status: "refused", message: "This group has no failed jobs any more: nothing to delete." };
  }
  const parsed = form.safeParse({
    jobIds: [...new Set(ids)],
    reason: text(data.get("reason")),
    releaseKeys: text(data.get("releaseKeys")) === "on",
  });
  if (!parsed.success) {
    const fieldErrors: FieldErrors = {};
    for (const i of parsed.error.issues) fieldErrors[String(i.path[0] ?? "form")] ??= i.message;
    return { status: "error", message: fieldErrors.jobIds ?? "Check the highlighted fields.", fieldErrors };
  }
  const { jobIds, reason, releaseKeys } = parsed.data;
  let deleted = 0;
  let released = 0;
  let kept = 0;
  let other = 0;
  try {
    for (let i = 0; i < jobIds.length; i += MAX_JOB_IDS) {
      const r = await queue.deleteFailedJobs(
        { jobIds: jobIds.slice(i, i + MAX_JOB_IDS) },
        { actor, reason, releaseKeys },
      );
      deleted += r.deleted;
      released += r.releasedBindings;
      kept += r.keptOwningLiveKey.length;
      other += Object.values(r.unchanged).reduce((a: number, n) => a + (n ?? 0), 0);
    }
  } catch (err) {
    if (err instanceof EnqueueValidationError) {
      return { status: "error", message: `${err.option}: ${err.rule}`, fieldErrors: {} };
    }
    throw err;
  }
  const parts = [`Deleted ${plural(deleted, "failed job")}`];
  if (released > 0) parts.push(`released ${plural(released, "idempotency key")}`);
  let summary = `${parts.join("; ")}.`;
  if (kept > 0) {
    summary += ` Kept ${plural(kept, "job")} that still own${kept === 1 ? "s" : ""} a live idempotency key (a repeat of the request returns ${kept === 1 ? "it" : "them"}); tick "Also delete jobs that own a live key" to delete ${kept === 1 ? "it" : "them"} too.`;
  }
  if (other > 0) summary += ` Not changed: ${plural(other, "job")} no longer failed or gone.`;
  return {
    status: "done",
    summary,
    counts: { deleted, releasedBindings: released, keptOwningLiveKey: kept, unchanged: other },
    seq: ++seq,
  };
}
