import type { Metadata } from "next";
import { PurgeDialog } from "@/components/purge-dialog";
import { QueuePausePanel } from "@/components/queue-pause-panel";
import { QueuesLive } from "@/components/queues-live";
import { PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { pausedQueues, pendingQueueNames } from "@/lib/console/reads/operator-reads";
import { queueHealth } from "@/lib/console/reads/queues";
import { purgeQueueAction } from "../jobs/actions";
import { queuePauseAction } from "./actions";

export const metadata: Metadata = { title: "Queues" };

export default async function QueuesPage() {
  const viewer = await requireViewer();
  const pool = await consolePool();
  const [data, paused, pendingNames] = await Promise.all([
    queueHealth(pool),
    pausedQueues(pool),
    pendingQueueNames(pool),
  ]);
  const purge = viewer.readOnly
    ? null
    : Object.fromEntries(
        data.queues.map((q) => [
          q.queue,
          <PurgeDialog
            key={q.queue}
            action={purgeQueueAction}
            hidden={{ queue: q.queue }}
            label="Purge queue…"
            title={`Purge every pending job of “${q.queue}”?`}
            description="All ready and scheduled jobs of this queue become tombstones (state purged) and release their idempotency bindings. Active and finished jobs are not touched. This cannot be undone."
          />,
        ]),
      );
  return (
    <>
      <PageHeader
        title="Queues"
        description={
          viewer.readOnly
            ? "Per queue: what waits, what runs, how long the oldest due job has waited (latency), and the last hour's results."
            : "Per queue: what waits, what runs, how long the oldest due job has waited (latency), and the last hour's results. Purging a queue removes its ready and scheduled jobs and releases the keys they own."
        }
      />
      <QueuesLive initial={data} purge={purge} />
      <div className="mt-4">
        <QueuePausePanel
          queues={[...data.queues.map((q) => q.queue), ...pendingNames]}
          paused={paused}
          action={viewer.readOnly ? null : queuePauseAction}
        />
      </div>
    </>
  );
}
