"use server";
import type { Queue } from "@workhorse/core";
import { revalidatePath } from "next/cache";
import type { Pool } from "pg";
import { purgeJob, purgeQueue } from "@/lib/console/actions/mutations";
import { cancelJobs, purgeSelected, redriveJobs, runJobsNow } from "@/lib/console/actions/operator-action-forms";
import { requireMutator } from "@/lib/console/auth/viewer";
import { consoleDb } from "@/lib/console/databases/db";
import { parseJobFilters } from "@/lib/console/reads/filters";
import { countMatchingJobs } from "@/lib/console/reads/operator-reads";
import { invalidateCounts } from "@/lib/console/reads/overview";
import type { OperatorActionState, PurgeState, RedriveState } from "@/lib/console/wire/action-state";
import type { JobFilterParams } from "@/lib/console/wire/types";

type Refused = { status: "refused"; message: string };

/**
 * A mutation as the signed-in operator (refused without one) on the page's database. When
 * `changed(result)`, the overview counts are invalidated and `paths` revalidated. `destructive`: the
 * form of a purge or cancel, which on a production database must carry its name typed out.
 */
async function asMutator<S extends { status: string }>(
  run: (queue: Queue, actor: string, pool: Pool) => Promise<S>,
  paths: readonly (readonly [string, "layout"?])[],
  changed: (result: S) => boolean = (r) => r.status === "done",
  destructive?: FormData,
): Promise<S | Refused> {
  const m = await requireMutator({ destructive });
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await run(queue, m.actor, pool);
  if (changed(result)) {
    invalidateCounts(pool);
    for (const [path, type] of paths) revalidatePath(path, type);
  }
  return result;
}

const JOBS = [["/jobs", "layout"]] as const;

export async function purgeJobAction(_prev: PurgeState, data: FormData): Promise<PurgeState> {
  return asMutator((queue, actor) => purgeJob(queue, actor, data), JOBS, undefined, data);
}

export async function purgeQueueAction(_prev: PurgeState, data: FormData): Promise<PurgeState> {
  return asMutator((queue, actor) => purgeQueue(queue, actor, data), [["/queues"]], undefined, data);
}

export async function cancelJobsAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  return asMutator((queue, actor, pool) => cancelJobs(queue, actor, data, pool), JOBS, undefined, data);
}

export async function runNowAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  return asMutator((queue, actor, pool) => runJobsNow(queue, actor, data, pool), JOBS);
}

export async function redriveAction(_prev: RedriveState, data: FormData): Promise<RedriveState> {
  return asMutator(
    (queue, actor, pool) => redriveJobs(queue, actor, data, pool),
    [...JOBS, ["/dead-letters", "layout"]],
    (r) => r.status === "done" && !r.dryRun,
  );
}

/** How many jobs match the jobs list's filter (counted up to the bulk cap), for "select all matching". */
export async function countMatchingAction(
  filter: JobFilterParams,
): Promise<{ value: number; capped: boolean } | { error: string }> {
  const m = await requireMutator();
  if (!m.ok) return { error: m.message };
  const { pool } = await consoleDb();
  const f = parseJobFilters({
    queue: filter?.queue ?? "",
    type: filter?.type ?? "",
    state: filter?.state ?? "",
    tag: filter?.tag ?? "",
    error: filter?.error ?? "",
    due: filter?.due ?? "",
  });
  return countMatchingJobs(pool, {
    queue: f.queue,
    type: f.type,
    state: f.state,
    tag: f.tag,
    error: f.error,
    due: f.due,
  });
}

export async function purgeSelectedAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  return asMutator((queue, actor, pool) => purgeSelected(queue, actor, data, pool), JOBS, undefined, data);
}
