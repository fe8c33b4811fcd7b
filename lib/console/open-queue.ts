import "server-only";
import { queueProbed } from "@/lib/enqueue/store/console-status";
import { parseQueueName } from "./filters";
import { stateCounts } from "./overview";
import type { Db } from "./read-queries";
import { pathParam } from "./request-info";

/** What a `/queues/<name>` path names: a queue name, or something that is not one. */
export type QueuePath = { kind: "name"; queue: string } | { kind: "invalid" };

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
 * Whether a queue is known: paused or holding a job in any state. First a few index probes (pending,
 * failed, canceled, purged jobs; the pause table); then the jobs-by-queue-and-state counts the queue
 * page reads anyway (stateCounts: shared, at most 15 s old), which also find the queues whose jobs
 * are all running or finished. So a queue whose first jobs all ran within those 15 s can answer 404
 * until the counts are read again.
 */
export async function queueKnown(db: Db, queue: string): Promise<boolean> {
  if (await queueProbed(db, queue)) return true;
  return (await stateCounts(db)).rows.some((r) => r.queue === queue);
}

/** The known queue (queueKnown) a `/queues/<name>` path names, else null. */
export async function knownQueueAt(db: Db, path: string): Promise<string | null> {
  const named = queuePath(path);
  return named?.kind === "name" && (await queueKnown(db, named.queue)) ? named.queue : null;
}

/**
 * For `/queues/<name>`: whether the path names no queue, because the name is not one or no job was
 * ever enqueued to it and it is not paused. The console layout asks this before the pages' loading
 * boundary starts streaming, so such a page answers HTTP 404, as jobPathMissing does for jobs.
 * Other paths: false.
 */
export async function queuePathMissing(db: Db, path: string): Promise<boolean> {
  return queuePath(path) !== null && (await knownQueueAt(db, path)) === null;
}
