"use client";
import Link from "next/link";
import { formatDuration, formatTime } from "@/lib/console/format";
import type { JobDetailDto } from "@/lib/console/types";
import { BindingDetails } from "./binding-card";
import { LiveJobState } from "./job-actions";
import { LiveStatus } from "./live-status";
import { PurgeAllowed } from "./purge-dialog";
import { Badge, Card, DefinitionList, linkClass, Mono } from "./ui";
import { useLive } from "./use-live";

export function JobLive({ initial, purge }: { initial: JobDetailDto; purge: React.ReactNode }) {
  const { data: job, error, dataUpdatedAt } = useLive(`/api/jobs/${initial.id}`, initial);
  const canPurge = job.state === "ready" || job.state === "scheduled";
  return (
    <div className="grid gap-4 lg:grid-cols-3">
      <div className="space-y-4 lg:col-span-2">
        <Card title="Job">
          <DefinitionList
            items={[
              ["State", <Badge key="s">{job.state}</Badge>],
              ["Type", job.type],
              ["Queue", job.queue],
              ["Attempts", `${job.attempt} of ${job.maxAttempts}`],
              ["Tags", job.tags.length ? job.tags.join(", ") : "—"],
              ["Run at", formatTime(job.runAt)],
              ["Created", formatTime(job.createdAt)],
              ["Updated", formatTime(job.updatedAt)],
              ["Started", formatTime(job.startedAt)],
              ["Finished", formatTime(job.finishedAt)],
              ["Deadline", formatTime(job.deadline)],
              ["Execution timeout", job.executionTimeoutMs ? formatDuration(job.executionTimeoutMs) : "—"],
              ["Concurrency key", job.concurrencyKey ?? "—"],
              [
                "Lease",
                job.state === "active" && job.leaseOwner
                  ? `${job.leaseOwner} until ${formatTime(job.leaseExpiresAt)}`
                  : job.leaseOwner
                    ? `last held by ${job.leaseOwner}`
                    : "—",
              ],
              ...(job.cancelRequestedAt
                ? ([
                    ["Cancel requested", `${formatTime(job.cancelRequestedAt)} by ${job.cancelRequestedBy ?? "?"}`],
                  ] as [string, React.ReactNode][])
                : []),
              ...(job.redrivenFrom
                ? ([
                    [
                      "Redriven from",
                      <Link key="rf" className={linkClass} href={`/jobs/${job.redrivenFrom}`}>
                        <Mono>{job.redrivenFrom}</Mono>
                      </Link>,
                    ],
                  ] as [string, React.ReactNode][])
                : []),
              ...(job.redriveJobIds.length
                ? ([
                    [
                      "Redriven as",
                      <span key="ra" className="flex flex-col">
                        {job.redriveJobIds.map((r) => (
                          <Link key={r} className={linkClass} href={`/jobs/${r}`}>
                            <Mono>{r}</Mono>
                          </Link>
                        ))}
                      </span>,
                    ],
                  ] as [string, React.ReactNode][])
                : []),
              ...(job.purgedAt
                ? ([
                    ["Purged", `${formatTime(job.purgedAt)} by ${job.purgedBy ?? "?"}`],
                    ["Purge reason", job.purgeReason ?? "—"],
                  ] as [string, React.ReactNode][])
                : []),
            ]}
          />
        </Card>
        <Card title="Payload">
          <pre className="max-h-96 overflow-auto rounded bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-all text-slate-900">
            {job.payloadJson}
          </pre>
        </Card>
        {job.lastErrorJson ? (
          <Card title="Last error">
            <pre className="max-h-64 overflow-auto rounded bg-red-50 p-3 font-mono text-xs whitespace-pre-wrap break-all text-red-950">
              {job.lastErrorJson}
            </pre>
          </Card>
        ) : null}
        <Card title="Event timeline">
          {job.events.length === 0 ? (
            <p className="text-sm text-slate-600">No events recorded.</p>
          ) : (
            <ol className="space-y-3">
              {job.events.map((e) => (
                <li key={e.seq} className="border-l-2 border-slate-300 pl-3">
                  <div className="flex flex-wrap items-center gap-2 text-sm">
                    <Badge tone={e.kind === "purged" ? "purged" : undefined}>{e.kind}</Badge>
                    <span className="text-slate-600">{formatTime(e.at)}</span>
                  </div>
                  {e.data ? (
                    <pre className="mt-1 overflow-auto font-mono text-xs whitespace-pre-wrap break-all text-slate-700">
                      {JSON.stringify(e.data, null, 2)}
                    </pre>
                  ) : null}
                </li>
              ))}
            </ol>
          )}
        </Card>
      </div>
      <div className="space-y-4">
        <Card title="Idempotency binding">
          {job.binding ? (
            <BindingDetails binding={job.binding} now={job.now} />
          ) : (
            <p className="text-sm text-slate-600">
              No binding: this job was enqueued without a key, or its key was released (purge) or cleaned up after
              expiring.
            </p>
          )}
        </Card>
        <Card title="Actions">
          <LiveJobState.Provider value={{ state: job.state, cancelRequested: job.cancelRequestedAt !== null }}>
            <PurgeAllowed.Provider value={canPurge}>{purge}</PurgeAllowed.Provider>
          </LiveJobState.Provider>
        </Card>
        <p className="text-xs text-slate-600">
          Job id <Mono>{job.id}</Mono>
        </p>
        <LiveStatus error={error} updatedAt={dataUpdatedAt} />
      </div>
    </div>
  );
}
