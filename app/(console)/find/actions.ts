"use server";
import type { FindKeyState } from "@/lib/console/action-state";
import { consoleDb } from "@/lib/console/db";
import { findByKey } from "@/lib/console/find-key";
import { currentViewer, sameOriginRequest } from "@/lib/console/viewer";

/** POST only: the raw key travels in the request body, is hashed by lib/enqueue, and is never returned. */
export async function findByKeyAction(_prev: FindKeyState, data: FormData): Promise<FindKeyState> {
  const v = await currentViewer();
  if (v.status !== "ok") return { status: "error", message: "Sign in again to look keys up.", fieldErrors: {} };
  if (!(await sameOriginRequest())) {
    return { status: "error", message: "Lookups are accepted from this console's own page only.", fieldErrors: {} };
  }
  const { queue, pool } = await consoleDb();
  return findByKey(queue, pool, data);
}
