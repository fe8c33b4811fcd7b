import "server-only";
import { queueKnown } from "@/lib/enqueue/store/console-status";
import { parseQueueName } from "./filters";
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

/** The known queue (queueKnown: a few index probes) a `/queues/<name>` path names, else null. */
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
