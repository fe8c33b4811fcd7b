"use client";
import { Link } from "@/components/db-link";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { WorkersDto } from "@/lib/console/wire/types";
import { LiveStatus } from "./live-status";
import { RelativeTime } from "./relative-time";
import { Badge, EmptyState, JobLink, linkClass, Table, Td } from "./ui";
import { useLive } from "./use-live";

type WorkerState = WorkersDto["workers"][number]["state"];

const STATE_LABEL: Record<WorkerState, { text: string; tone: string }> = {
  busy: { text: "busy", tone: "active" },
  idle: { text: "idle", tone: "ok" },
  stopping: { text: "stopping", tone: "canceled" },
  gone: { text: "gone", tone: "failed" },
};

export function WorkersLive({ initial }: { initial: WorkersDto }) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.workers(), initial);
  const counts = { busy: 0, idle: 0, stopping: 0, gone: 0 };
  for (const w of data.workers) counts[w.state]++;
  return (
    <div>
      {data.workers.length === 0 ? (
        <EmptyState title="No worker is running.">
          Running workers check in here every heartbeat interval, idle or busy. Start one with{" "}
          <code className="rounded bg-slate-100 px-1 py-0.5 text-slate-900">npm run worker</code>.
        </EmptyState>
      ) : (
        <>
          <p className="mb-3 text-sm text-slate-700" data-testid="worker-counts">
            {counts.busy} busy, {counts.idle} idle
            {counts.stopping ? `, ${counts.stopping} stopping` : ""}
            {counts.gone ? `, ${counts.gone} gone` : ""}
          </p>
          <Table
            caption="Workers"
            head={["Worker", "State", "Queues", "Jobs in hand", "Concurrency", "Started", "Last check-in"]}
          >
            {data.workers.map((w) => (
              <tr key={w.worker}>
                <Td wrap>
                  <code className="font-mono text-xs break-all text-slate-900">{w.worker}</code>
                  <div className="text-xs text-slate-600">
                    {w.host} · pid {w.pid}
                  </div>
                </Td>
                <Td>
                  <Badge tone={STATE_LABEL[w.state].tone}>{STATE_LABEL[w.state].text}</Badge>
                </Td>
                <Td wrap className="min-w-32">
                  {w.queues.map((q, i) => (
                    <span key={q}>
                      {i ? ", " : ""}
                      <Link className={linkClass} href={`/queues/${encodeURIComponent(q)}`}>
                        {q}
                      </Link>
                    </span>
                  ))}
                  {w.types ? <div className="text-xs text-slate-600">types: {w.types.join(", ")}</div> : null}
                </Td>
                <Td wrap className="min-w-32">
                  <div className="tabular-nums">
                    {w.held} job{w.held === 1 ? "" : "s"}
                  </div>
                  <div className="flex flex-wrap gap-1 text-xs">
                    {w.jobIds.map((id) => (
                      <JobLink key={id} id={id} className="" />
                    ))}
                  </div>
                </Td>
                <Td>
                  <span className="tabular-nums">
                    {w.running} / {w.concurrency}
                  </span>
                  <span className="sr-only"> handlers running</span>
                </Td>
                <Td>
                  <RelativeTime iso={w.startedAt} now={data.now} />
                </Td>
                <Td>
                  <RelativeTime iso={w.checkedAt} now={data.now} />
                </Td>
              </tr>
            ))}
          </Table>
        </>
      )}
      <LiveStatus error={error} updatedAt={dataUpdatedAt} />
    </div>
  );
}
