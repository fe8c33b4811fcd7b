import { Link } from "@/components/db-link";
import { formatTime } from "@/lib/console/wire/format";
import type { DigestLookupDto } from "@/lib/console/wire/types";
import { BindingDetails } from "./binding-card";
import { ObservationCount } from "./observation-count";
import { Badge, Card, DefinitionList, EmptyState, JobLink, linkClass, Mono, Notice, Table, Td } from "./ui";

/** Everything known under one key digest: its bindings (with their jobs) and its observations. */
export function DigestResult({ data }: { data: DigestLookupDto }) {
  return (
    <div className="space-y-4" data-testid="digest-answer">
      <Card
        title={
          <>
            Bindings with key digest <Mono>{data.digest}</Mono>
          </>
        }
      >
        {data.bindings.length === 0 && data.released.length > 0 ? (
          <div className="space-y-1 text-sm text-slate-700" data-testid="digest-released">
            {data.released.map((r) => (
              <p key={r.jobId}>
                No binding: in scope “{r.scope}” the key was released when job{" "}
                <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${r.jobId}`}>
                  {r.jobId}
                </Link>{" "}
                was purged at {formatTime(r.purgedAt)}. The next request with it creates a new job.
              </p>
            ))}
          </div>
        ) : data.bindings.length === 0 ? (
          <p className="text-sm text-slate-700">
            No binding, live or expired, has this digest, and no purged job had it
            {data.releasedComplete ? "" : " (that search took too long and was stopped)"}. The key may have expired and
            been cleaned up, or never been used; the observations below may still show it.
          </p>
        ) : (
          <div className="space-y-6">
            {data.bindings.length > 1 ? (
              <Notice tone="warn">
                {data.bindings.length} bindings share this digest (different scopes, or two keys whose digests collide):
                check the scope.
              </Notice>
            ) : null}
            {data.bindings.map(({ binding, job }) => (
              <div key={`${binding.scope}:${binding.jobId}`} className="space-y-3">
                <p className="text-sm">
                  {binding.expired ? (
                    <>
                      <Badge>expired</Badge> In scope “{binding.scope}” the key expired at{" "}
                      {formatTime(binding.expiresAt)}; the next request with it creates a new job.
                    </>
                  ) : (
                    <>
                      <Badge>live</Badge> In scope “{binding.scope}” the key is bound to job{" "}
                      <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${binding.jobId}`}>
                        {binding.jobId}
                      </Link>
                      .
                    </>
                  )}
                </p>
                {job ? (
                  <DefinitionList
                    items={[
                      ["Job state", <Badge key="s">{job.state}</Badge>],
                      ["Type", job.type],
                      ["Queue", job.queue],
                    ]}
                  />
                ) : (
                  <p className="text-sm text-slate-700">The job this binding names no longer exists.</p>
                )}
                <BindingDetails binding={binding} now={data.now} showJob />
              </div>
            ))}
          </div>
        )}
        {data.scopesSearchedAll ? null : (
          <p className="mt-3 text-xs text-slate-600">
            Only the first 1,000 scopes were searched; add the scope to the key lookup above for the others.
          </p>
        )}
      </Card>
      <Card title="Replays and conflicts under this digest (newest 20)">
        {!data.observationsComplete ? (
          <Notice tone="warn">The search of the observation log took too long and was stopped.</Notice>
        ) : data.observations.length === 0 ? (
          <EmptyState title="No replays or conflicts recorded under this digest." />
        ) : (
          <Table
            caption="Observations under this key digest"
            head={["Time", "Outcome", "Scope", "Queue / type", "Job"]}
          >
            {data.observations.map((o) => (
              <tr key={o.id}>
                <Td>{formatTime(o.at)}</Td>
                <Td>
                  <Badge>{o.outcome}</Badge>
                  <ObservationCount count={o.count} lastAt={o.lastAt} />
                  {o.conflictingFields?.length ? (
                    <div className="mt-1 text-xs text-slate-700">differs in {o.conflictingFields.join(", ")}</div>
                  ) : null}
                </Td>
                <Td>{o.scope}</Td>
                <Td>
                  {o.queue} / {o.type}
                </Td>
                <Td>
                  <JobLink id={o.jobId} />
                </Td>
              </tr>
            ))}
          </Table>
        )}
      </Card>
    </div>
  );
}
