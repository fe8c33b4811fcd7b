import "server-only";
import { EnqueueValidationError } from "@workhorse/core";
import { NextResponse } from "next/server";
import { apiAccess } from "../auth/viewer";
import { consolePool } from "../databases/pools";
import type { Sql } from "./read-queries";

/**
 * A polling endpoint: access check, then `read(db)` as JSON (no-store). Errors map to statuses:
 * 401/403 access, 400 bad input, 503 anything else (message only; details go to the server log,
 * which never holds a raw key because no read model ever sees one).
 */
export async function jsonRead<T>(read: (db: Sql) => Promise<T>): Promise<Response> {
  const denied = await apiAccess();
  if (denied) return NextResponse.json({ error: denied.error }, { status: denied.status });
  try {
    const body = await read(await consolePool());
    return NextResponse.json(body, { headers: { "cache-control": "no-store" } });
  } catch (err) {
    if (err instanceof NotFound) return NextResponse.json({ error: err.message }, { status: 404 });
    if (err instanceof EnqueueValidationError) {
      return NextResponse.json({ error: err.message }, { status: 400 });
    }
    console.error(`[console] read failed: ${(err as Error)?.message ?? String(err)}`);
    return NextResponse.json({ error: "The database could not be read. Try again shortly." }, { status: 503 });
  }
}

export class NotFound extends Error {}
