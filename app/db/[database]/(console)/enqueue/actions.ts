"use server";
import { enqueueTestJob } from "@/lib/console/actions/mutations";
import { requireMutator } from "@/lib/console/auth/viewer";
import { consoleDb } from "@/lib/console/databases/db";
import { invalidateCounts } from "@/lib/console/reads/overview";
import type { EnqueueFormState } from "@/lib/console/wire/action-state";

export async function enqueueTestJobAction(_prev: EnqueueFormState, data: FormData): Promise<EnqueueFormState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "error", message: m.message, fieldErrors: {} };
  const { queue, pool } = await consoleDb();
  const result = await enqueueTestJob(queue, m.actor, data);
  if (result.status === "done" && result.outcome === "accepted") invalidateCounts(pool);
  return result;
}
