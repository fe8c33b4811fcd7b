import "server-only";
import { cache } from "react";
import { queueProbed } from "@/lib/store/console/status";
import { pathParam } from "../auth/request-info";
import type { QueuePath } from "../wire/types";
import { parseQueueName } from "./filters";
import { jobPathMissing } from "./open-job";
import { stateCounts } from "./overview";
import type { Sql } from "./read-queries";

/**
 * The queue a path names (`/queues/<name>`, percent-decoded): "invalid" when the name does not
 * decode or is not a queue name (parseQueueName: 1..128 characters, no control characters); null
 * for any other path.
 */
export function queuePath(path: string): QueuePath | null {
  const param = pathParam(path, "queues");
  if (param === null) return null;
  const queue = param === false ? null : parseQueueName(param);
  return queue ? { kind: "name", queue } : { kind: "invalid" };
}

/**
 * Whether a queue is known: paused or holding a job in any state. First a few bounded probes
 * (queueProbed: pending, failed, canceled, purged jobs by index; the pause table; the newest running
 * and finished jobs); then the jobs-by-queue-and-state counts the queue page reads anyway
 * (stateCounts: shared, at most 15 s old), which find the queues whose jobs all finished before the
 * newest 1,000. Once per request (React's cache): a full load asks in the console layout and again
 * in the queue page.
 */
export const queueKnown: (db: Sql, queue: string) => Promise<boolean> = cache(async (db: Sql, queue: string) => {
  if (await queueProbed(db, queue)) return true;
  return (await stateCounts(db)).rows.some((r) => r.queue === queue);
});

/** The known queue (queueKnown) a `/queues/<name>` path names, else null. */
export async function knownQueueAt(db: Sql, path: string): Promise<string | null> {
  const named = queuePath(path);
  return named?.kind === "name" && (await queueKnown(db, named.queue)) ? named.queue : null;
}

/**
 * For `/queues/<name>`: whether the path names no queue, because the name is not one or no job was
 * ever enqueued to it and it is not paused. The console layout asks this before the pages' loading
 * boundary starts streaming, so such a page answers HTTP 404, as jobPathMissing does for jobs.
 * Other paths: false.
 */
export async function queuePathMissing(db: Sql, path: string): Promise<boolean> {
  return queuePath(path) !== null && (await knownQueueAt(db, path)) === null;
}

/**
 * For the console layout, before the pages' loading boundary starts streaming: whether the path
 * names no job (jobPathMissing) or no queue (queuePathMissing), so the page answers HTTP 404. When
 * PostgreSQL cannot be read this answers false: the page then shows its own "could not be loaded"
 * error, as every other page does, instead of the layout failing into a 500. (An invalid queue name
 * or job id needs no read and is still a 404.)
 */
export async function consolePathMissing(db: Sql, path: string): Promise<boolean> {
  try {
    return (await jobPathMissing(db, path)) || (await queuePathMissing(db, path));
  } catch {
    return false;
  }
}
