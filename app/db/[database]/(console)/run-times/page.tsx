import type { Metadata } from "next";
import { Link } from "@/components/db-link";
import { Card, EmptyState, linkClass, PageHeader, Table, Td } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { LIVE_SAMPLE, runTimes, type SpanStats, trendWord } from "@/lib/console/reads/run-times";
import { formatTime } from "@/lib/console/wire/format";

export const metadata: Metadata = { title: "Run times" };
export const dynamic = "force-dynamic";

function duration(ms: number | null, open = false): string {
  if (ms === null) return "—";
  const text = ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${ms / 1000} s` : `${ms / 60_000} min`;
  return open ? `≥ ${text}` : `≤ ${text}`;
}

function Span({ s }: { s: SpanStats }) {
  if (s.runs === 0) return <span className="text-slate-600">no runs</span>;
  return (
    <span className="tabular-nums">
      p50 {duration(s.p50Ms)} · p95 {duration(s.p95Ms, s.p95Open)}
      <span className="block text-xs text-slate-600">
        {s.runs.toLocaleString("en-US")} run{s.runs === 1 ? "" : "s"}
        {s.failed ? `, ${s.failed.toLocaleString("en-US")} failed` : ""}
      </span>
    </span>
  );
}

export default async function RunTimesPage() {
  await requireViewer();
  const data = await runTimes(await consolePool());
  return (
    <>
      <PageHeader
        title="Run times"
        description={`How long jobs run, per queue and type: p50 and p95 of the attempt that finished each job (succeeded or failed), over the last hour, the last 24 hours and 7 days, to the bound of a duration bucket. Whole hours come from an hourly rollup (whole days of the 7, from a daily one) that maintenance keeps for 30 days, and maintenance also counts the jobs finished since, on every run; from the jobs themselves the page reads only those finished since maintenance last ran (at most ${LIVE_SAMPLE.toLocaleString("en-US")}), so the counts are exact. Below, each dead-letter group's failures now against the day before.`}
      />
      <div className="space-y-6">
        <Card title="Durations by queue and type">
          <p className="mb-3 text-sm text-slate-700" data-testid="rollup-state">
            {data.rolledUpTo
              ? `History rolled up to the hour starting ${formatTime(data.rolledUpTo)}.`
              : "No history rolled up yet: day and week figures cover the last hour or two until maintenance runs."}{" "}
            The 7 days start {formatTime(data.weekFrom)} (midnight UTC).
          </p>
          {data.liveSample ? (
            <p className="mb-3 text-sm text-slate-700" data-testid="live-sample">
              Partial counts: more jobs finished since maintenance last ran than the page reads. It read the newest{" "}
              {data.liveSample.jobs.toLocaleString("en-US")} (back to {formatTime(data.liveSample.since)}); the last
              hour and the hours not rolled up yet count only those until maintenance runs again.
            </p>
          ) : null}
          {data.rows.length === 0 ? (
            <EmptyState title="No job finished in the last 7 days." />
          ) : (
            <Table
              caption="Run times by queue and type"
              head={["Queue · type", "Runs, last hour", "Runs, last 24 hours", "Runs, last 7 days"]}
            >
              {data.rows.map((r) => (
                <tr key={`${r.queue}\u001f${r.type}`}>
                  <Td wrap className="min-w-40">
                    <Link className={linkClass} href={`/queues/${encodeURIComponent(r.queue)}`}>
                      {r.queue}
                    </Link>
                    <div className="text-xs text-slate-600">{r.type}</div>
                  </Td>
                  <Td>
                    <Span s={r.lastHour} />
                  </Td>
                  <Td>
                    <Span s={r.lastDay} />
                  </Td>
                  <Td>
                    <Span s={r.last7Days} />
                  </Td>
                </tr>
              ))}
            </Table>
          )}
        </Card>
        <Card title="Dead-letter groups: error trend">
          {data.trendSample ? (
            <p className="mb-3 text-sm text-slate-700" data-testid="trend-sample">
              Partial counts: the last hour and the hours not rolled up yet count only the newest{" "}
              {data.trendSample.jobs.toLocaleString("en-US")} jobs read (back to {formatTime(data.trendSample.since)})
              until maintenance runs again; whole hours come from the hourly failure rollup.
            </p>
          ) : null}
          {data.deadLetterTrend.length === 0 ? (
            <EmptyState title="No job failed in the last two days." />
          ) : (
            <Table
              caption="Failures per dead-letter group, last hour, last 24 hours and the 24 hours before"
              head={[
                "Group",
                "Failures, last hour",
                "Failures, last 24 hours",
                "Failures, the 24 hours before",
                "Trend (24 hours against the 24 before)",
              ]}
            >
              {data.deadLetterTrend.map((g) => (
                <tr key={`${g.queue}\u001f${g.type}\u001f${g.errorName}`}>
                  <Td wrap className="min-w-40">
                    <Link
                      className={linkClass}
                      href={`/dead-letters?${new URLSearchParams({ queue: g.queue, type: g.type, errorName: g.errorName })}`}
                    >
                      {g.errorName}
                    </Link>
                    <div className="text-xs text-slate-600">
                      {g.queue} · {g.type}
                    </div>
                  </Td>
                  <Td className="tabular-nums">{g.lastHour}</Td>
                  <Td className="tabular-nums">{g.lastDay}</Td>
                  <Td className="tabular-nums">{g.dayBefore}</Td>
                  <Td>{trendWord(g.lastDay, g.dayBefore)}</Td>
                </tr>
              ))}
            </Table>
          )}
        </Card>
      </div>
    </>
  );
}
