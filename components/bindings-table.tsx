"use client";
import { formatDuration } from "@/lib/console/wire/format";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { BindingDto } from "@/lib/console/wire/types";
import { Countdown } from "./countdown";
import { RelativeTime } from "./relative-time";
import { LiveTable, type LiveTableProps, pageHref } from "./table-footer";
import { Badge, DemoHint, DigestLink, EmptyState, JobLink, Mono, Td } from "./ui";
import { useLive } from "./use-live";

export function BindingsTable({ initial, query, filtered }: LiveTableProps<BindingDto>) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.bindings(query), initial);
  const params = new URLSearchParams(query);
  const nextHref = data.next ? pageHref("/bindings", query, "after", data.next) : null;
  const firstHref = pageHref("/bindings", query, "after", null);
  // A page of idempotency keys only (the common case) hides the column: it would say the same on every row.
  const showMode = data.rows.some((b) => b.mode !== "idempotency") || params.has("mode");
  return (
    <LiveTable
      rows={data.rows}
      empty={
        <EmptyState title={filtered ? "No bindings match these filters." : "No bindings here."}>
          {filtered ? null : <DemoHint />}
        </EmptyState>
      }
      caption="Key bindings"
      head={[
        "Scope",
        "Key preview",
        "Digest",
        "Length",
        ...(showMode ? ["Mode"] : []),
        "Job",
        "Created",
        "Expires",
        "TTL remaining",
      ]}
      error={error}
      updatedAt={dataUpdatedAt}
      links={[
        { href: params.get("after") ? firstHref : null, label: "← First page" },
        { href: nextHref, label: "Next →" },
      ]}
      row={(b) => (
        <tr key={`${b.scope}:${b.keyDigest}:${b.jobId}`} className="hover:bg-slate-50">
          <Td wrap className="min-w-32">
            {b.scope}
          </Td>
          <Td>
            <Mono>{b.keyPreview}</Mono>
          </Td>
          <Td>
            <DigestLink digest={b.keyDigest} />
          </Td>
          <Td className="tabular-nums">{b.keyLength}</Td>
          {showMode ? (
            <Td>
              {b.mode}
              {b.mode === "debounce" ? (
                <div className="text-xs text-slate-600">
                  {b.schedule ?? "reset"}
                  {b.maxWaitUntil ? " · capped" : ""}
                </div>
              ) : null}
            </Td>
          ) : null}
          <Td>
            <JobLink id={b.jobId} />
          </Td>
          <Td>
            <RelativeTime iso={b.createdAt} now={data.now} />
          </Td>
          <Td>
            {b.expiresAt ? <RelativeTime iso={b.expiresAt} now={data.now} /> : "never by time"}
            <div className="text-xs text-slate-600">
              {b.ttlMs !== null ? `${b.mode === "idempotency" ? "TTL" : "window"} ${formatDuration(b.ttlMs)}` : null}
              {b.holdUntil ? ` until the job ${b.holdUntil === "finished" ? "finishes" : "starts"}` : null}
            </div>
          </Td>
          <Td>
            {b.expired ? (
              <Badge>expired</Badge>
            ) : b.expiresAt ? (
              <Countdown expiresAt={b.expiresAt} serverNow={data.now} />
            ) : (
              "held"
            )}
          </Td>
        </tr>
      )}
    />
  );
}
