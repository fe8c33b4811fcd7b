"use client";
import Link from "next/link";
import { liveUrl } from "@/lib/console/live-urls";
import type { WorkersDto } from "@/lib/console/wire-types";
import { LiveStatus } from "./live-status";
import { RelativeTime } from "./relative-time";
import { Badge, EmptyState, JobLink, linkClass, Table, Td } from "./ui";
import { useLive } from "./use-live";

export function WorkersLive({ initial }: { initial: WorkersDto }) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.workers(), initial);
  return (
    <div>
      {data.workers.length === 0 ? (
        <EmptyState title="No worker holds a job right now.">
          Workers appear here while they run jobs. Start one with{" "}
          <code className="rounded bg-slate-100 px-1 py-0.5 text-slate-900">npm run worker</code>.
        </EmptyState>
      ) : (
        <Table caption="Workers running jobs" head={["Worker", "Running", "Queues", "Lease renewed until", "Status"]}>
          {data.workers.map((w) => (
            <tr key={w.worker}>
              <Td wrap>
                <code className="font-mono text-xs break-all text-slate-900">{w.worker}</code>
              </Td>
              <Td>
                <div className="tabular-nums">
                  {w.jobs} job{w.jobs === 1 ? "" : "s"}
                </div>
                <div className="flex flex-wrap gap-1 text-xs">
                  {w.jobIds.map((id) => (
                    <JobLink key={id} id={id} className="" />
                  ))}
                </div>
              </Td>
              <Td wrap>
                {w.queues.map((q, i) => (
                  <span key={q}>
                    {i ? ", " : ""}
                    <Link className={linkClass} href={`/queues/${encodeURIComponent(q)}`}>
                      {q}
                    </Link>
                  </span>
                ))}
              </Td>
              <Td>
                <RelativeTime iso={w.leaseUntil} now={data.now} />
              </Td>
              <Td>
                {w.lapsed === w.jobs ? (
                  <Badge tone="failed">stopped: every lease lapsed</Badge>
                ) : w.lapsed > 0 ? (
                  <Badge tone="active">
                    {w.lapsed} lease{w.lapsed === 1 ? "" : "s"} lapsed
                  </Badge>
                ) : (
                  <Badge tone="ok">heartbeating</Badge>
                )}
              </Td>
            </tr>
          ))}
        </Table>
      )}
      <LiveStatus error={error} updatedAt={dataUpdatedAt} />
    </div>
  );
}
