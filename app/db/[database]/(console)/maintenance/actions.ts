"use server";
import { runMaintenanceNow } from "@/lib/console/actions/mutations";
import { requireMutator } from "@/lib/console/auth/viewer";
import { consoleDb } from "@/lib/console/databases/db";
import type { MaintenanceState } from "@/lib/console/wire/action-state";

export async function runMaintenanceAction(_prev: MaintenanceState, _data: FormData): Promise<MaintenanceState> {
  const m = await requireMutator();
  if (!m.ok) return { status: "error", message: m.message, fieldErrors: {} };
  const { queue } = await consoleDb();
  return runMaintenanceNow(queue, m.actor);
}
