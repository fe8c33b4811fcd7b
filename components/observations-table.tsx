"use client";
import { liveUrl } from "@/lib/console/wire/live-urls";
import { explainOutcome, REASON_LABELS } from "@/lib/console/wire/outcome-text";
import type { ObservationDto } from "@/lib/console/wire/types";
import { ObservationCount } from "./observation-count";
import { RelativeTime } from "./relative-time";
import { LiveTable, type LiveTableProps, newestOlderLinks } from "./table-footer";
import { Badge, DemoHint, DigestLink, EmptyState, JobLink, Mono, Td } from "./ui";
import { useLive } from "./use-live";
import { NewRowsBar, useNewRows } from "./use-new-rows";

export function ObservationsTable({ initial, query, filtered }: LiveTableProps<ObservationDto>) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.conflicts(query), initial);
  const view = useNewRows(data.rows, (o) => o.id);
  return (
    <LiveTable
      before={<NewRowsBar count={view.newCount} onShow={view.showNew} />}
      rows={view.rows}
      empty={
        <EmptyState title={filtered ? "Nothing matches these filters." : "No replays or conflicts recorded yet."}>
          {filtered ? null : <DemoHint />}
        </EmptyState>
      }
      caption="Replays, conflicts, coalesced, non-replaceable and replaced requests, newest first"
      head={["Time", "Outcome", "Queue · type", "Scope · key", "What differed", "Existing job", "Source"]}
      error={error}
      updatedAt={dataUpdatedAt}
      links={newestOlderLinks("/conflicts", query, data.next)}
      row={(o) => (
        <tr key={o.id} className="hover:bg-slate-50">
          <Td>
            <RelativeTime iso={o.at} now={data.now} />
          </Td>
          <Td>
            <Badge tone={o.outcome === "conflict" || o.outcome === "non_replaceable" ? "conflict" : o.outcome}>
              {o.outcome}
            </Badge>
            <ObservationCount count={o.count} lastAt={o.lastAt} />
            {o.reason ? (
              <div className="max-w-56 text-xs whitespace-normal text-slate-700" data-testid="observation-reason">
                <span className="font-medium">{REASON_LABELS[o.reason] ?? o.reason}</span>
                <span className="sr-only"> ({o.reason})</span>: {explainOutcome(o.outcome, o.reason).meaning}
              </div>
            ) : null}
          </Td>
          <Td wrap className="min-w-32">
            {o.queue}
            <div className="text-xs text-slate-600">{o.type}</div>
          </Td>
          <Td wrap className="min-w-40">
            {o.scope}
            <div className="text-xs text-slate-600">
              <Mono>{o.keyPreview}</Mono> · <DigestLink digest={o.keyDigest} /> ·{" "}
              <span className="whitespace-nowrap">{o.keyLength} ch</span>
            </div>
          </Td>
          <Td wrap className="min-w-40">
            {o.conflictingFields?.length ? (
              <>
                <ul className="flex flex-wrap gap-1" aria-label="Conflicting fields">
                  {o.conflictingFields.map((f) => (
                    <li key={f}>
                      <Badge tone="conflict">{f}</Badge>
                    </li>
                  ))}
                </ul>
                {o.payloadPaths?.length ? (
                  <div className="mt-1 font-mono text-xs text-slate-700">{o.payloadPaths.join(", ")}</div>
                ) : null}
              </>
            ) : (
              <span className="text-slate-600">—</span>
            )}
            {o.storedRequestDigest || o.rejectedRequestDigest ? (
              <div className="mt-1 text-xs text-slate-700">
                {o.storedRequestDigest ? (
                  <div className="whitespace-nowrap">
                    {o.outcome === "replaced" ? "replaced request" : "stored request"}{" "}
                    <Mono>{o.storedRequestDigest.slice(0, 12)}</Mono>
                  </div>
                ) : null}
                {o.rejectedRequestDigest ? (
                  <div className="whitespace-nowrap">
                    {o.outcome === "replaced" ? "replaced by" : "this request"}{" "}
                    <Mono>{o.rejectedRequestDigest.slice(0, 12)}</Mono>
                  </div>
                ) : null}
              </div>
            ) : null}
          </Td>
          <Td>
            <JobLink id={o.jobId} />
          </Td>
          <Td className="text-xs">{o.source ?? "—"}</Td>
        </tr>
      )}
    />
  );
}
