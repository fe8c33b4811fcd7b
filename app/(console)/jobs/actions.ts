"use server";
import { revalidatePath } from "next/cache";
import type { PurgeState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { purgeJob, purgeQueue } from "@/lib/console/mutations";
import { invalidateCounts } from "@/lib/console/overview";
import { requireMutator } from "@/lib/console/session";

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
