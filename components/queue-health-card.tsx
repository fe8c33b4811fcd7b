"use client";
import { Link } from "@/components/db-link";
import { formatCount } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import { JOB_STATES, type QueueHealthDto } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { failureRateText, QueueFlags } from "./queues-live";
import { RelativeTime } from "./relative-time";
import { Card, DefinitionList, linkClass } from "./ui";
import { useLive } from "./use-live";

type Data = { now: string; queues: QueueHealthDto[] };

/** One queue's health on its page, polled from /api/queues?queue=…. */
export function QueueHealthCard({ initial, queue }: { initial: Data; queue: string }) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.queues(queue), initial);
  const q = data.queues[0];
  if (!q) return null;
  const href = (state: string) => `/jobs?queue=${encodeURIComponent(queue)}&state=${state}`;
  return (
    <div className="grid gap-4 lg:grid-cols-2">
      <Card title="Now">
        <DefinitionList
          items={[
            ["Latency", <QueueFlags key="f" q={q} now={data.now} />],
            ["Next scheduled", <RelativeTime key="n" iso={q.nextRunAt} now={data.now} />],
            [
              "Waiting",
              `${formatCount(q.pending)} (${formatCount(q.waiting.ready)} ready, ${formatCount(q.waiting.scheduled)} scheduled)`,
            ],
            [
              "Retrying",
              q.retrying ? (
                <Link key="r" className={linkClass} href={href("retrying")}>
                  {formatCount(q.retrying)} scheduled again after a failed attempt
                </Link>
              ) : (
                "none"
              ),
            ],
            [
              "Last hour",
              `${formatCount(q.lastHour.succeeded)} succeeded, ${formatCount(q.lastHour.failed)} failed (failure rate ${failureRateText(q)})`,
            ],
          ]}
        />
      </Card>
      <Card title="Jobs by state">
        <ul className="grid grid-cols-2 gap-2 text-sm sm:grid-cols-4">
          {JOB_STATES.map((s) => (
            <li key={s} className="rounded border border-slate-200 px-2 py-1.5">
              <Link className={linkClass} href={href(s)}>
                {s}
              </Link>
              <div className="text-lg font-semibold tabular-nums text-slate-900" data-state={s}>
                {formatCount(q.counts[s] ?? 0)}
              </div>
            </li>
          ))}
        </ul>
        <p className="mt-2 text-xs text-slate-600">State counts are refreshed at most every 15 s.</p>
        <LiveStatus error={error} updatedAt={dataUpdatedAt} />
      </Card>
    </div>
  );
}
