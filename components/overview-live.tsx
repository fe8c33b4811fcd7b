"use client";
import Link from "next/link";
import { ago, formatCount } from "@/lib/console/format";
import { JOB_STATES, type OverviewDto } from "@/lib/console/types";
import { LiveStatus } from "./live-status";
import { Card, DemoHint, EmptyState, linkClass, Stat, Table, Td } from "./ui";
import { useLive } from "./use-live";

export function OverviewLive({ initial }: { initial: OverviewDto }) {
  const { data, error, dataUpdatedAt } = useLive("/api/overview", initial);
  const states = JOB_STATES.filter((s) => data.byQueue.some((q) => q.counts[s]));
  return (
    <div className="space-y-6">
      <section aria-labelledby="hour" className="space-y-2">
        <h2 id="hour" className="text-base font-semibold text-slate-900">
          Last hour
        </h2>
        <div className="grid grid-cols-2 gap-3 md:grid-cols-3 lg:grid-cols-6">
          <Stat label="Accepted" value={formatCount(data.lastHour.accepted)} hint="new jobs" />
          <Stat label="Replayed" value={formatCount(data.lastHour.replayed)} hint="repeats answered" />
          <Stat
            label="Conflicts"
            value={
              <Link className={linkClass} href="/conflicts?outcome=conflict&since=1h">
                {formatCount(data.lastHour.conflicts)}
              </Link>
            }
            hint="key reused for other work"
          />
          <Stat
            label="Live bindings"
            value={
              <Link className={linkClass} href="/bindings">
                {formatCount(data.liveBindings)}
              </Link>
            }
          />
          <Stat label="Expiring within 1 h" value={formatCount(data.expiringWithinHour)} />
          <Stat
            label="Expired, awaiting cleanup"
            value={
              <Link className={linkClass} href="/bindings?status=expired">
                {formatCount(data.expiredAwaitingCleanup)}
              </Link>
            }
          />
        </div>
      </section>
      <Card title="Jobs by queue and state">
        {data.byQueue.length === 0 ? (
          <EmptyState title="No jobs yet.">
            <DemoHint />
          </EmptyState>
        ) : (
          <>
            <Table caption="Jobs by queue and state" head={["Queue", ...states, "Total"]}>
              {data.byQueue.map((q) => (
                <tr key={q.queue}>
                  <Td>
                    <Link className={linkClass} href={`/jobs?queue=${encodeURIComponent(q.queue)}`}>
                      {q.queue}
                    </Link>
                  </Td>
                  {states.map((s) => (
                    <Td key={s} className="tabular-nums">
                      {q.counts[s] ? (
                        <Link className={linkClass} href={`/jobs?queue=${encodeURIComponent(q.queue)}&state=${s}`}>
                          {formatCount(q.counts[s])}
                        </Link>
                      ) : (
                        <span className="text-slate-600">0</span>
                      )}
                    </Td>
                  ))}
                  <Td className="font-medium tabular-nums">{formatCount(q.total)}</Td>
                </tr>
              ))}
              <tr className="bg-slate-50">
                <Td className="font-semibold">All queues</Td>
                {states.map((s) => (
                  <Td key={s} className="font-semibold tabular-nums">
                    {formatCount(data.byState[s] ?? 0)}
                  </Td>
                ))}
                <Td className="font-semibold tabular-nums">
                  {formatCount(Object.values(data.byState).reduce((a, b) => a + (b ?? 0), 0))}
                </Td>
              </tr>
            </Table>
            <p className="mt-2 text-xs text-slate-600">
              Counts as of {ago(data.countsAsOf, data.now)} (refreshed at most every 15 s).
            </p>
          </>
        )}
      </Card>
      <LiveStatus error={error} updatedAt={dataUpdatedAt} />
    </div>
  );
}
