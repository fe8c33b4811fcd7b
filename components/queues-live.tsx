"use client";
import Link from "next/link";
import { formatCount, formatTime } from "@/lib/console/format";
import type { QueueSummaryDto } from "@/lib/console/types";
import { LiveStatus } from "./live-status";
import { DemoHint, EmptyState, linkClass, Table, Td } from "./ui";
import { useLive } from "./use-live";

type Data = { now: string; queues: QueueSummaryDto[] };

export function QueuesLive({ initial, purge }: { initial: Data; purge: Record<string, React.ReactNode> | null }) {
  const { data, error, dataUpdatedAt } = useLive("/api/queues", initial);
  return (
    <div>
      {data.queues.length === 0 ? (
        <EmptyState title="No queues yet.">
          <DemoHint />
        </EmptyState>
      ) : (
        <Table
          caption="Queues"
          head={["Queue", "Pending (ready + scheduled)", "Next run at", purge ? "Purge" : "Jobs"]}
        >
          {data.queues.map((q) => (
            <tr key={q.queue}>
              <Td>
                <Link className={linkClass} href={`/jobs?queue=${encodeURIComponent(q.queue)}`}>
                  {q.queue}
                </Link>
              </Td>
              <Td className="tabular-nums">{formatCount(q.pending)}</Td>
              <Td>{formatTime(q.nextRunAt)}</Td>
              <Td>
                {purge ? (
                  (purge[q.queue] ?? <span className="text-xs text-slate-600">new queue: reload to purge</span>)
                ) : (
                  <Link className={linkClass} href={`/jobs?queue=${encodeURIComponent(q.queue)}`}>
                    Browse
                  </Link>
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
