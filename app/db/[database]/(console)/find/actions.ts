"use server";
import { DEFAULT_SCOPE } from "@workhorse/core";
import { currentViewer, sameOriginRequest } from "@/lib/console/auth/viewer";
import { consoleDatabases, consoleDb, openDatabase } from "@/lib/console/databases/db";
import { findKeyEverywhere } from "@/lib/console/reads/find-everywhere";
import { findByKey } from "@/lib/console/reads/find-key";
import type { FindKeyState } from "@/lib/console/wire/action-state";

/**
 * POST only: the raw key travels in the request body, is hashed by lib/enqueue, and is never returned.
 * The page's database answers in full; with several databases configured, every one is asked too
 * (each hashing with its own secret) and the answer lists where the key lives.
 */
export async function findByKeyAction(_prev: FindKeyState, data: FormData): Promise<FindKeyState> {
  const v = await currentViewer();
  if (v.status !== "ok") return { status: "error", message: "Sign in again to look keys up.", fieldErrors: {} };
  if (!(await sameOriginRequest())) {
    return { status: "error", message: "Lookups are accepted from this console's own page only.", fieldErrors: {} };
  }
  const { queue, pool } = await consoleDb();
  const databases = consoleDatabases();
  const [state, everywhere] = await Promise.all([
    findByKey(queue, pool, data),
    databases.length > 1
      ? findKeyEverywhere(
          databases,
          openDatabase,
          typeof data.get("key") === "string" ? (data.get("key") as string) : "",
          (typeof data.get("scope") === "string" ? (data.get("scope") as string).trim() : "") || DEFAULT_SCOPE,
        )
      : null,
  ]);
  if (everywhere && (state.status === "found" || state.status === "none")) return { ...state, everywhere };
  return state;
}
