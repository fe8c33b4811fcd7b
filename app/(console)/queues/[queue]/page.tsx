import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { HealthChart } from "@/components/health-chart";
import { PurgeDialog } from "@/components/purge-dialog";
import { QueueHealthCard } from "@/components/queue-health-card";
import { linkClass, PageHeader, secondaryButtonClass } from "@/components/ui";
import { consolePool } from "@/lib/console/db";
import { parseQueueName } from "@/lib/console/filters";
import { queueHealth } from "@/lib/console/queues";
import { series } from "@/lib/console/series";
import { requireViewer } from "@/lib/console/session";
import { purgeQueueAction } from "../../jobs/actions";

export const metadata: Metadata = { title: "Queue" };

export default async function QueuePage({ params }: { params: Promise<{ queue: string }> }) {
  const viewer = await requireViewer();
  let decoded: string | undefined;
  try {
    decoded = decodeURIComponent((await params).queue);
  } catch {
    notFound();
  }
  const queue = parseQueueName(decoded);
  if (!queue) notFound();
  const db = await consolePool();
  const [health, lastHour] = await Promise.all([queueHealth(db, queue), series(db, "1h", queue)]);
  return (
    <>
      <p className="mb-2 text-sm">
        <Link className={linkClass} href="/queues">
          ← Queues
        </Link>
      </p>
      <PageHeader
        title={`Queue ${queue}`}
        description="Decisions and results per minute, latency, and jobs by state for this queue."
        actions={
          <>
            <Link className={secondaryButtonClass} href={`/jobs?queue=${encodeURIComponent(queue)}`}>
              Browse jobs
            </Link>
            {viewer.readOnly ? null : (
              <PurgeDialog
                action={purgeQueueAction}
                hidden={{ queue }}
                label="Purge queue…"
                title={`Purge every pending job of “${queue}”?`}
                description="All ready and scheduled jobs of this queue become tombstones (state purged) and release their idempotency bindings. Active and finished jobs are not touched. This cannot be undone."
              />
            )}
          </>
        }
      />
      <div className="space-y-6">
        <HealthChart initial={lastHour} queue={queue} />
        <QueueHealthCard initial={health} queue={queue} />
      </div>
    </>
  );
}
