/**
 * Which running workers would take a job of `type` from `queue`, from the workers' check-ins (the
 * Workers page's data, lib/console/reads/workers.ts): the enqueue-test form says so beside its Queue
 * field. Client-safe (wire types only).
 */
import type { WorkersDto } from "./types";

type WorkerDto = WorkersDto["workers"][number];

/**
 * The workers that are running (busy or idle: not `stopping`, not `gone`) and list `queue` among
 * their queues, and whose types are every type (`types` null) or include `type`. Order kept.
 */
export function workersTaking(workers: readonly WorkerDto[], queue: string, type: string): WorkerDto[] {
  return workers.filter(
    (w) =>
      (w.state === "busy" || w.state === "idle") &&
      w.queues.includes(queue) &&
      (w.types === null || w.types.includes(type)),
  );
}

/**
 * The form's sentence for `count` such workers: whether a test job of `type` on `queue` runs at
 * once (and how to keep it waiting) or waits for a worker.
 */
export function queueWorkersNote(count: number, queue: string, type: string): string {
  const what = `${type ? `${type} jobs` : "jobs"} from queue "${queue}"`;
  if (count === 0) return `No running worker takes ${what}: a test job waits there until one does.`;
  const who = count === 1 ? "1 running worker takes" : `${count} running workers take`;
  return `${who} ${what}, so it runs it as soon as it is due. To keep a test job waiting (to look it up, purge it or free its key), set Run at later or pause the queue.`;
}
