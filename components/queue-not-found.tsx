import { Link } from "@/components/db-link";
import type { QueuePath } from "@/lib/console/wire/types";
import { cx, echoClass } from "./ui";

/**
 * What `/queues/<name>` says when it names no queue (HTTP 404): the name is not a queue name, or
 * no job was ever enqueued to that queue and it is not paused. Shown by the root not-found page
 * (a full load: the console layout decided) and by the queue page's own (a client navigation).
 */
export function QueueNotFound({ named }: { named: QueuePath }) {
  return (
    <>
      <h1 className="text-2xl font-semibold text-slate-900">Queue not found</h1>
      <p className={cx("mt-2 text-slate-700", echoClass)}>
        {named.kind === "name"
          ? `No job was ever enqueued to queue “${named.queue}”, and it is not paused. A queue exists by its jobs: the first job enqueued to a name makes it.`
          : "This address is not a queue name: a queue name has 1 to 128 characters and no control characters (percent-encoded in the address)."}
      </p>
      <Link className="mt-4 mr-4 inline-block text-blue-700 underline" href="/queues">
        Back to queues
      </Link>
    </>
  );
}
