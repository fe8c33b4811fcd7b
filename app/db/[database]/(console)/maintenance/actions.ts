"use server";
import type { MaintenanceState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { runMaintenanceNow } from "@/lib/console/mutations";
import { requireMutator } from "@/lib/console/viewer";

export async function runMaintenanceAction(_prev: MaintenanceState, _data: FormData): Promise<MaintenanceState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "error", message: m.message, fieldErrors: {} };
  const { queue } = await consoleDb();
  return runMaintenanceNow(queue, m.actor);
}
