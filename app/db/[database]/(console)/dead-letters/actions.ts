"use server";
import { revalidatePath } from "next/cache";
import type { OperatorActionState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { deleteDeadLetters } from "@/lib/console/dead-letter-delete";
import { invalidateCounts } from "@/lib/console/overview";
import { requireMutator } from "@/lib/console/viewer";

/** Deletes failed jobs (a selection or a dead-letter group) as the signed-in operator. */
export async function deleteDeadLettersAction(
  _prev: OperatorActionState,
  data: FormData,
): Promise<OperatorActionState> {
  const m = await requireMutator({ destructive: data });
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue, pool } = await consoleDb();
  const result = await deleteDeadLetters(queue, m.actor, data);
  if (result.status === "done" && (result.counts.deleted ?? 0) > 0) {
    invalidateCounts(pool);
    revalidatePath("/dead-letters", "layout");
    revalidatePath("/jobs", "layout");
  }
  return result;
}
