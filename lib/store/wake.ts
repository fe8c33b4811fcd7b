/**
 * Wake-ups: a NOTIFY on one channel per accepted job's queue (the SQL functions send it in the
 * enqueue's transaction; the core sends the coalesced ones from outside), and the LISTEN a worker
 * holds on a connection of its own. Workers poll as well, so a lost wake-up only delays a job.
 */
import type pg from "pg";
import type { Sql } from "./layout";

/** Channel that workers LISTEN on; the payload is the queue name. */
export const WAKE_CHANNEL = "workhorse_jobs";

/** One NOTIFY per queue, in one statement: `select pg_notify('workhorse_jobs', q) from unnest($1)`. */
export async function notifyQueues(db: Sql, queues: string[]): Promise<void> {
  await db.query("select pg_notify($1, q) from unnest($2::text[]) q", [WAKE_CHANNEL, queues]);
}

/** `LISTEN workhorse_jobs` on `client` (a dedicated connection: its notifications arrive as events). */
export async function listenForWakes(client: pg.ClientBase): Promise<void> {
  await client.query(`listen ${WAKE_CHANNEL}`);
}
