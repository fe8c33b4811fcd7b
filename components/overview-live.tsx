"use client";
import { Link } from "@/components/db-link";
import { ago, formatCount } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import { JOB_STATES, type OverviewDto } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { Card, DemoHint, EmptyState, linkClass, Stat, Table, Td } from "./ui";
import { useLive } from "./use-live";

export function OverviewLive({ initial }: { initial: OverviewDto }) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.overview(), initial);
  const states = JOB_STATES.filter((s) => data.byQueue.some((q) => q.counts[s]));
  return (
    <div className="space-y-6">
      <section aria-labelledby="keys" className="space-y-2">
        <h2 id="keys" className="text-base font-semibold text-slate-900">
          Idempotency keys now
        </h2>
        <div className="grid grid-cols-1 gap-3 sm:grid-cols-3">
          {[
            {
              label: "Live bindings",
              count: data.liveBindings,
              href: "/bindings",
              hint: "keys that replay or conflict if sent again",
            },
            {
              label: "Expiring within 1 h",
              count: data.expiringWithinHour,
              href: null,
              hint: "after that the key is free for new work",
            },
            {
              label: "Expired, awaiting cleanup",
              count: data.expiredAwaitingCleanup,
              href: "/bindings?status=expired",
              hint: "no longer bind; maintenance removes them",
            },
          ].map(({ label, count, href, hint }) => (
            <Stat
              key={label}
              label={label}
              value={
                href ? (
                  <Link className={linkClass} href={href}>
                    {formatCount(count)}
                  </Link>
                ) : (
                  formatCount(count)
                )
              }
              hint={hint}
            />
          ))}
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
                    <Link className={linkClass} href={`/queues/${encodeURIComponent(q.queue)}`}>
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
