"use server";
import { revalidatePath } from "next/cache";
import type { OperatorActionState, PurgeState, RedriveState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { parseJobFilters } from "@/lib/console/filters";
import { purgeJob, purgeQueue } from "@/lib/console/mutations";
import { cancelJobs, purgeSelected, redriveJobs, runJobsNow } from "@/lib/console/operator-action-forms";
import { countMatchingJobs } from "@/lib/console/operator-reads";
import { invalidateCounts } from "@/lib/console/overview";
import { requireMutator } from "@/lib/console/viewer";

export async function purgeJobAction(_prev: PurgeState, data: FormData): Promise<PurgeState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await purgeJob(queue, m.actor, data);
  if (result.status === "done") {
    invalidateCounts(pool);
    revalidatePath("/jobs", "layout");
  }
  return result;
}

export async function purgeQueueAction(_prev: PurgeState, data: FormData): Promise<PurgeState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await purgeQueue(queue, m.actor, data);
  if (result.status === "done") {
    invalidateCounts(pool);
    revalidatePath("/queues");
  }
  return result;
}

export async function cancelJobsAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await cancelJobs(queue, m.actor, data, pool);
  if (result.status === "done") {
    invalidateCounts(pool);
    revalidatePath("/jobs", "layout");
  }
  return result;
}

export async function runNowAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await runJobsNow(queue, m.actor, data, pool);
  if (result.status === "done") {
    invalidateCounts(pool);
    revalidatePath("/jobs", "layout");
  }
  return result;
}

export async function redriveAction(_prev: RedriveState, data: FormData): Promise<RedriveState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await redriveJobs(queue, m.actor, data, pool);
  if (result.status === "done" && !result.dryRun) {
    invalidateCounts(pool);
    revalidatePath("/jobs", "layout");
    revalidatePath("/dead-letters", "layout");
  }
  return result;
}

/** How many jobs match the jobs list's filter (counted up to the bulk cap), for "select all matching". */
export async function countMatchingAction(filter: {
  queue?: string;
  type?: string;
  state?: string;
  tag?: string;
  error?: string;
}): Promise<{ value: number; capped: boolean } | { error: string }> {
  const m = await requireMutator();
  if (!m.ok) return { error: m.message };
  const { pool } = await consoleDb();
  const f = parseJobFilters({
    queue: filter?.queue ?? "",
    type: filter?.type ?? "",
    state: filter?.state ?? "",
    tag: filter?.tag ?? "",
    error: filter?.error ?? "",
  });
  return countMatchingJobs(pool, { queue: f.queue, type: f.type, state: f.state, tag: f.tag, error: f.error });
}

export async function purgeSelectedAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await purgeSelected(queue, m.actor, data, pool);
  if (result.status === "done") {
    invalidateCounts(pool);
    revalidatePath("/jobs", "layout");
  }
  return result;
}
