"use server";
import { revalidatePath } from "next/cache";
import { deleteDeadLetters } from "@/lib/console/actions/dead-letter-delete";
import { requireMutator } from "@/lib/console/auth/viewer";
import { consoleDb } from "@/lib/console/databases/db";
import { invalidateCounts } from "@/lib/console/reads/overview";
import type { OperatorActionState } from "@/lib/console/wire/action-state";

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
