"use client";
import { canPurge } from "@workhorse/core/client";
import { formatDuration, formatTime } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { JobDetailDto } from "@/lib/console/wire/types";
import { BindingDetails } from "./binding-card";
import { JsonWithStacks } from "./error-block";
import { LiveJobState } from "./job-actions";
import { LiveStatus } from "./live-status";
import { PurgeAllowed } from "./purge-dialog";
import { RelativeTime } from "./relative-time";
import { Badge, Card, DefinitionList, DigestLink, Mono, MonoLink, Notice } from "./ui";
import { useLive } from "./use-live";

/** The key the job was enqueued with, as its `enqueued` event recorded it (never the raw key). */
function enqueuedKey(job: JobDetailDto): { scope: string; keyDigest: string; expiresAt: string | null } | null {
  const data = job.events.find((e) => e.kind === "enqueued")?.data as
    | { scope?: string; keyDigest?: string; expiresAt?: string }
    | null
    | undefined;
  return data?.keyDigest
    ? { scope: data.scope ?? "", keyDigest: data.keyDigest, expiresAt: data.expiresAt ?? null }
    : null;
}

const BINDING_TITLE = {
  idempotency: "Idempotency binding",
  debounce: "Debounce binding",
  throttle: "Throttle binding",
} as const;

/** A `debounced` timeline entry in words: a repeat replaced the definition (digests only, never values). */
function DebouncedLine({ data }: { data: unknown }) {
  const d = (data ?? {}) as { priorRequestDigest?: string; requestDigest?: string; runAt?: string };
  return (
    <p className="mt-1 text-sm text-slate-700" data-testid="debounced-entry">
      A repeat replaced this job's definition in place: request{" "}
      <Mono>{(d.priorRequestDigest ?? "?").slice(0, 12)}</Mono> → <Mono>{(d.requestDigest ?? "?").slice(0, 12)}</Mono>
      {d.runAt ? `; due ${formatTime(d.runAt)}` : ""}.
    </p>
  );
}

/** Why a held key was released, in words: the job's state change its `key_released` event names. */
const RELEASE_WORDS: Record<string, string> = {
  started: "a worker started this job",
  succeeded: "this job succeeded",
  failed: "this job failed for good",
  canceled: "this job was canceled",
  purged: "this job was purged",
};

/** The job's `key_released` event (docs/enqueue.md, "Key lifetimes"): its lifetime, reason and time. */
function keyRelease(job: JobDetailDto): { holdUntil: string; reason: string; at: string } | null {
  const e = job.events.find((x) => x.kind === "key_released");
  if (!e) return null;
  const d = (e.data ?? {}) as { holdUntil?: string; reason?: string };
  return { holdUntil: d.holdUntil ?? "finished", reason: d.reason ?? "", at: e.at };
}

/** A `key_released` timeline entry in words. */
function KeyReleasedLine({ data }: { data: unknown }) {
  const d = (data ?? {}) as { holdUntil?: string; reason?: string };
  return (
    <p className="mt-1 text-sm text-slate-700" data-testid="key-released-entry">
      The key, held until this job {d.holdUntil === "started" ? "started" : "finished"}, was released:{" "}
      {RELEASE_WORDS[d.reason ?? ""] ?? d.reason ?? "its job changed state"}. The next request with it creates a new
      job.
    </p>
  );
}

/** An active job whose lease lapsed: its worker stopped renewing it (crashed, stalled or cut off). */
function LeaseNotice({ job }: { job: JobDetailDto }) {
  if (job.state !== "active" || !job.leaseExpiresAt) return null;
  const lapsed = Date.parse(job.now) - Date.parse(job.leaseExpiresAt);
  if (lapsed <= 0) return null;
  return (
    <Notice tone="warn" role="status">
      Lease expired {formatDuration(lapsed)} ago;{" "}
      {job.attempt < job.maxAttempts
        ? `another worker will run it (attempt ${job.attempt + 1} of ${job.maxAttempts}).`
        : "it has no attempts left and will be marked failed."}
    </Notice>
  );
}

/** `payload`: the payload card, rendered once by the page (a live refresh never carries the payload). */
export function JobLive({
  initial,
  purge,
  payload,
}: {
  initial: JobDetailDto;
  purge: React.ReactNode;
  payload: React.ReactNode;
}) {
  const { data: job, error, dataUpdatedAt } = useLive(liveUrl.job(initial.id), initial);
  const purgeAllowed = canPurge(job.state);
  const key = enqueuedKey(job);
  const release = keyRelease(job);
  const retrying = job.state === "scheduled" && !!job.lastErrorJson;
  return (
    <div className="grid gap-4 lg:grid-cols-3">
      <div className="space-y-4 lg:col-span-2">
        <LeaseNotice job={job} />
        <Card title="Job">
          <DefinitionList
            items={[
              [
                "State",
                retrying ? (
                  <span key="s">
                    <Badge>retrying</Badge>{" "}
                    <span className="text-sm text-slate-700">
                      attempt {job.attempt} failed; the next runs <RelativeTime iso={job.runAt} now={job.now} />
                    </span>
                  </span>
                ) : (
                  <Badge key="s">{job.state}</Badge>
                ),
              ],
              ["Type", job.type],
              ["Queue", job.queue],
              ["Attempts", `${job.attempt} of ${job.maxAttempts}`],
              ["Tags", job.tags.length ? job.tags.join(", ") : "—"],
              ["Run at", <Time key="r" iso={job.runAt} now={job.now} />],
              ["Created", <Time key="c" iso={job.createdAt} now={job.now} />],
              ["Updated", <Time key="u" iso={job.updatedAt} now={job.now} />],
              ["Started", <Time key="s" iso={job.startedAt} now={job.now} />],
              ["Finished", <Time key="f" iso={job.finishedAt} now={job.now} />],
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
                      <MonoLink key="rf" href={`/jobs/${job.redrivenFrom}`}>
                        {job.redrivenFrom}
                      </MonoLink>,
                    ],
                  ] as [string, React.ReactNode][])
                : []),
              ...(job.redriveJobIds.length
                ? ([
                    [
                      "Redriven as",
                      <span key="ra" className="flex flex-col">
                        {job.redriveJobIds.map((r) => (
                          <MonoLink key={r} href={`/jobs/${r}`}>
                            {r}
                          </MonoLink>
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
        {payload}
        {job.lastErrorJson ? (
          <Card title="Last error">
            <JsonWithStacks
              value={JSON.parse(job.lastErrorJson)}
              className="max-h-64 overflow-auto rounded bg-red-50 p-3 font-mono text-xs whitespace-pre-wrap break-all text-red-950"
            />
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
                  {e.kind === "debounced" ? <DebouncedLine data={e.data} /> : null}
                  {e.kind === "key_released" ? <KeyReleasedLine data={e.data} /> : null}
                  {e.data ? (
                    <JsonWithStacks
                      value={e.data}
                      className="mt-1 overflow-auto font-mono text-xs whitespace-pre-wrap break-all text-slate-700"
                    />
                  ) : null}
                </li>
              ))}
            </ol>
          )}
        </Card>
      </div>
      <div className="space-y-4">
        <Card title={BINDING_TITLE[job.binding?.mode ?? "idempotency"]}>
          {job.binding ? (
            <BindingDetails binding={job.binding} now={job.now} />
          ) : key && release ? (
            <p className="text-sm text-slate-700" data-testid="binding-released">
              Held until this job {release.holdUntil === "started" ? "started" : "finished"}; released at{" "}
              {formatTime(release.at)}, when {RELEASE_WORDS[release.reason] ?? "its state changed"}. The key (digest{" "}
              <DigestLink digest={key.keyDigest} />, scope “{key.scope}”) is free, and the next request with it creates
              a new job.
            </p>
          ) : job.purgedAt && key && (!key.expiresAt || key.expiresAt > job.purgedAt) ? (
            <p className="text-sm text-slate-700" data-testid="binding-released">
              Released by this job's purge at {formatTime(job.purgedAt)}
              {job.purgedBy ? ` (by ${job.purgedBy})` : ""}: the key (digest <DigestLink digest={key.keyDigest} />,
              scope “{key.scope}”) is free, and the next request with it creates a new job.
            </p>
          ) : key && job.redriveJobIds.length > 0 ? (
            <p className="text-sm text-slate-700">
              No binding: the key (digest <DigestLink digest={key.keyDigest} />) moved to the job redriven from this
              one, so a replay of the original request finds the job that runs.
            </p>
          ) : key ? (
            <p className="text-sm text-slate-700">
              No binding: the key (digest <DigestLink digest={key.keyDigest} />) expired
              {key.expiresAt ? ` at ${formatTime(key.expiresAt)}` : ""} and was cleaned up.
            </p>
          ) : (
            <p className="text-sm text-slate-600">No binding: this job was enqueued without a key.</p>
          )}
        </Card>
        <Card title="Actions">
          <LiveJobState.Provider
            value={{
              state: job.state,
              cancelRequested: job.cancelRequestedAt !== null,
              redrivenTo: job.redriveJobIds.at(-1) ?? null,
            }}
          >
            <PurgeAllowed.Provider value={purgeAllowed}>{purge}</PurgeAllowed.Provider>
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

/** Exact UTC time with the relative time beside it. */
function Time({ iso, now }: { iso: string | null; now: string }) {
  if (!iso) return <>—</>;
  return (
    <span>
      {formatTime(iso)}{" "}
      <span className="text-slate-600">
        (<RelativeTime iso={iso} now={now} />)
      </span>
    </span>
  );
}
