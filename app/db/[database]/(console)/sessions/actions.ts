"use server";
import { redirect } from "next/navigation";
import { deleteAllSessions } from "@/lib/console/auth/session-store";
import { getSession, requireMutator } from "@/lib/console/auth/viewer";
import { primaryDb } from "@/lib/console/databases/db";

/**
 * Ends every console session, this one included (audited). Allowed in read-only mode: it changes
 * no job, and an operator who suspects a stolen cookie must be able to do it.
 */
export async function signOutEverywhere(): Promise<void> {
  const m = await requireMutator({ allowReadOnly: true });
  if (!m.ok) redirect("/sign-in");
  const { pool, queue } = primaryDb();
  const ended = await deleteAllSessions(pool);
  await queue.recordOperatorAction({
    actor: m.actor,
    action: "sign_out_everywhere",
    target: "console",
    result: { status: "ok", sessionsEnded: ended },
  });
  (await getSession()).destroy();
  redirect("/sign-in");
}
