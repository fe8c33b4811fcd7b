import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { ActionDialog } from "@/components/action-dialog";
import { Link } from "@/components/db-link";
import { HealthChart } from "@/components/health-chart";
import { PurgeDialog } from "@/components/purge-dialog";
import { QueueHealthCard } from "@/components/queue-health-card";
import { linkClass, Notice, PageHeader, secondaryButtonClass } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { knownQueueAt } from "@/lib/console/reads/open-queue";
import { pausedQueues } from "@/lib/console/reads/operator-reads";
import { queueHealth } from "@/lib/console/reads/queues";
import { series } from "@/lib/console/reads/series";
import { formatTime } from "@/lib/console/wire/format";
import { purgeQueueAction } from "../../jobs/actions";
import { queuePauseAction } from "../actions";

export const metadata: Metadata = { title: "Queue" };

export default async function QueuePage({ params }: { params: Promise<{ queue: string }> }) {
  const viewer = await requireViewer();
  const db = await consolePool();
  // ./not-found.tsx; on a full load the console layout has answered 404 already (queuePathMissing).
  const queue = await knownQueueAt(db, `/queues/${(await params).queue}`);
  if (!queue) notFound();
  const [health, lastHour, paused] = await Promise.all([
    queueHealth(db, queue),
    series(db, "1h", queue),
    pausedQueues(db).then((all) => all.find((p) => p.queue === queue) ?? null),
  ]);
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
              <ActionDialog
                action={queuePauseAction}
                hidden={{ queue, action: paused ? "resume" : "pause" }}
                label={paused ? "Resume queue…" : "Pause queue…"}
                title={paused ? `Resume queue “${queue}”?` : `Pause queue “${queue}”?`}
                statement={
                  paused
                    ? "Workers start claiming this queue's jobs again right away."
                    : "Workers claim no new jobs from this queue until it is resumed (every worker sees this by its next poll). Jobs already running finish."
                }
                confirmLabel={paused ? "Confirm resume" : "Confirm pause"}
              />
            )}
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
        {paused ? (
          <Notice tone="warn" role="status">
            Paused by {paused.pausedBy} since {formatTime(paused.pausedAt)}: {paused.reason}. Workers claim nothing from
            this queue until it is resumed; jobs already running finish.
          </Notice>
        ) : null}
        <HealthChart initial={lastHour} queue={queue} />
        <QueueHealthCard initial={health} queue={queue} />
      </div>
    </>
  );
}
