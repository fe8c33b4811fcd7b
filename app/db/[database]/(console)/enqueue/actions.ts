"use server";
import type { EnqueueFormState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { enqueueTestJob } from "@/lib/console/mutations";
import { invalidateCounts } from "@/lib/console/overview";
import { requireMutator } from "@/lib/console/viewer";

export async function enqueueTestJobAction(_prev: EnqueueFormState, data: FormData): Promise<EnqueueFormState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "error", message: m.message, fieldErrors: {} };
  const { queue, pool } = await consoleDb();
  const result = await enqueueTestJob(queue, m.actor, data);
  if (result.status === "done" && result.outcome === "accepted") invalidateCounts(pool);
  return result;
}
