"use client";
import { useQuery } from "@tanstack/react-query";
import { databaseHref, splitDatabasePath } from "@/lib/console/wire/database-paths";
import { useRefreshPolicy } from "./refresh-policy";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Fetches a console API path under the database the page's own URL names (`/db/<name>/…`). */
export async function getJson<T>(url: string): Promise<T> {
  const database = splitDatabasePath(window.location.pathname)?.database ?? null;
  const res = await fetch(databaseHref(database, url), { headers: { accept: "application/json" }, cache: "no-store" });
  if (!res.ok) {
    let message = `Request failed (${res.status})`;
    try {
      const body = (await res.json()) as { error?: string };
      if (body.error) message = body.error;
    } catch {}
    throw new ApiError(res.status, message);
  }
  return (await res.json()) as T;
}

/**
 * A live view of `url` (an `app/api/*` route): starts from the server-rendered `initialData`, then
 * polls under the shared refresh policy. A failed poll keeps the last data and reports the error.
 */
export function useLive<T>(url: string, initialData: T) {
  const { intervalMs } = useRefreshPolicy();
  const q = useQuery<T>({
    queryKey: [url],
    queryFn: () => getJson<T>(url),
    initialData,
    initialDataUpdatedAt: Date.now(),
    refetchInterval: intervalMs,
  });
  return { data: q.data ?? initialData, error: q.error, dataUpdatedAt: q.dataUpdatedAt };
}
