"use server";
import { revalidatePath } from "next/cache";
import { setQueuePaused } from "@/lib/console/actions/operator-action-forms";
import { requireMutator } from "@/lib/console/auth/viewer";
import { consoleDb } from "@/lib/console/databases/db";
import type { OperatorActionState } from "@/lib/console/wire/action-state";

/** Pause or resume a queue (`action` = `pause` | `resume`); the actor comes from the session. */
export async function queuePauseAction(_prev: OperatorActionState, data: FormData): Promise<OperatorActionState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "refused", message: m.message };
  const { queue } = await consoleDb();
  const result = await setQueuePaused(queue, m.actor, data);
  if (result.status === "done") revalidatePath("/queues");
  return result;
}
