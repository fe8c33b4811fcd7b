"use client";
import { Link } from "@/components/db-link";
import { formatCount, formatDuration } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { QueueHealthDto } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { RelativeTime } from "./relative-time";
import { Badge, DemoHint, EmptyState, linkClass, Table, Td } from "./ui";
import { useLive } from "./use-live";

type Data = { now: string; queues: QueueHealthDto[] };

const jobsHref = (queue: string, extra = "") => `/jobs?queue=${encodeURIComponent(queue)}${extra}`;

/** The queue's latency, overdue warning and lapsed leases, in words. */
export function QueueFlags({ q, now }: { q: QueueHealthDto; now: string }) {
  const latencyMs = q.oldestDueAt ? Date.parse(now) - Date.parse(q.oldestDueAt) : null;
  return (
    <div className="space-y-1">
      {latencyMs === null ? (
        <span className="text-slate-700">nothing waiting</span>
      ) : (
        <span className={latencyMs > 60_000 ? "font-semibold text-red-800" : "text-slate-800"}>
          oldest due {formatDuration(Math.max(0, latencyMs))} ago
        </span>
      )}
      {q.overdue.value > 0 ? (
        <div role="note" className="text-xs">
          <Badge>overdue</Badge>{" "}
          <Link className={`${linkClass} underline`} href={jobsHref(q.queue, "&due=1")}>
            {formatCount(q.overdue)} due over a minute ago and not started
          </Link>
          : is a worker running for this queue?
        </div>
      ) : null}
      {q.lapsedLeases > 0 ? (
        <div className="text-xs">
          <Badge>lease expired</Badge>{" "}
          <Link className={`${linkClass} underline`} href={jobsHref(q.queue, "&state=active")}>
            {q.lapsedLeases} running job{q.lapsedLeases === 1 ? "" : "s"}
          </Link>{" "}
          lost {q.lapsedLeases === 1 ? "its" : "their"} worker; another will run {q.lapsedLeases === 1 ? "it" : "them"}
        </div>
      ) : null}
    </div>
  );
}

export function failureRateText(q: QueueHealthDto): string {
  if (q.failureRate === null) return "—";
  return `${(q.failureRate * 100).toFixed(q.failureRate > 0 && q.failureRate < 0.01 ? 1 : 0)} %`;
}

export function QueuesLive({ initial, purge }: { initial: Data; purge: Record<string, React.ReactNode> | null }) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.queues(), initial);
  return (
    <div>
      {data.queues.length === 0 ? (
        <EmptyState title="No queues yet.">
          <DemoHint />
        </EmptyState>
      ) : (
        <Table
          caption="Queues"
          head={["Queue", "Waiting", "Running", "Latency", "Next scheduled", "Last hour", ...(purge ? ["Purge"] : [])]}
        >
          {data.queues.map((q) => (
            <tr key={q.queue}>
              <Td>
                <Link className={`${linkClass} font-medium`} href={`/queues/${encodeURIComponent(q.queue)}`}>
                  {q.queue}
                </Link>
                {q.paused ? (
                  <div className="text-xs text-slate-700" title={`Paused by ${q.paused.pausedBy}: ${q.paused.reason}`}>
                    <Badge tone="purged">paused</Badge> workers claim nothing
                  </div>
                ) : null}
              </Td>
              <Td className="tabular-nums">
                <div>
                  <Link className={linkClass} href={jobsHref(q.queue, "&due=1")}>
                    {formatCount(q.waiting.ready)} ready
                  </Link>
                </div>
                <div className="text-xs text-slate-700">
                  <Link className={linkClass} href={jobsHref(q.queue, "&state=scheduled")}>
                    {formatCount(q.waiting.scheduled)} scheduled
                  </Link>
                  {q.retrying ? (
                    <>
                      {" "}
                      (
                      <Link className={linkClass} href={jobsHref(q.queue, "&state=retrying")}>
                        {formatCount(q.retrying)} retrying
                      </Link>
                      )
                    </>
                  ) : null}
                </div>
              </Td>
              <Td className="tabular-nums">{formatCount(q.counts.active ?? 0)}</Td>
              <Td wrap>
                <QueueFlags q={q} now={data.now} />
              </Td>
              <Td>{q.nextRunAt ? <RelativeTime iso={q.nextRunAt} now={data.now} /> : "—"}</Td>
              <Td className="tabular-nums">
                <div>
                  {formatCount(q.lastHour.succeeded)} succeeded, {formatCount(q.lastHour.failed)} failed
                </div>
                <div className="text-xs text-slate-700">failure rate {failureRateText(q)}</div>
              </Td>
              {purge ? (
                <Td>{purge[q.queue] ?? <span className="text-xs text-slate-600">new queue: reload to purge</span>}</Td>
              ) : null}
            </tr>
          ))}
        </Table>
      )}
      <LiveStatus error={error} updatedAt={dataUpdatedAt} />
    </div>
  );
}
