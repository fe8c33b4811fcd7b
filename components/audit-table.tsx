"use client";
import { Link } from "@/components/db-link";
import { liveUrl } from "@/lib/console/wire/live-urls";
import type { AuditDto } from "@/lib/console/wire/types";
import { RelativeTime } from "./relative-time";
import { LiveTable, type LiveTableProps, newestOlderLinks } from "./table-footer";
import { Badge, EmptyState, linkClass, Td } from "./ui";
import { useLive } from "./use-live";

function Target({ target }: { target: string }) {
  const m = /^job:([0-9a-f-]{36})$/.exec(target);
  if (m) {
    return (
      <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${m[1]}`}>
        {target}
      </Link>
    );
  }
  return <span className="font-mono text-xs break-all">{target}</span>;
}

function summary(r: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(r)) {
    if (k === "status") continue;
    parts.push(`${k}: ${Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)}`);
  }
  return parts.join(" · ");
}

export function AuditTable({ initial, query, filtered }: LiveTableProps<AuditDto>) {
  const { data, error, dataUpdatedAt } = useLive(liveUrl.audit(query), initial);
  return (
    <LiveTable
      rows={data.rows}
      empty={
        <EmptyState title={filtered ? "No audit entries match these filters." : "No operator actions yet."}>
          {filtered
            ? null
            : "Enqueueing a test job, purging and running maintenance from this console are recorded here."}
        </EmptyState>
      }
      caption="Operator audit log, newest first"
      head={["Time", "Actor", "Action", "Database", "Target", "Reason", "Result"]}
      error={error}
      updatedAt={dataUpdatedAt}
      links={newestOlderLinks("/audit", query, data.next)}
      row={(a) => (
        <tr key={a.id} className="hover:bg-slate-50">
          <Td>
            <RelativeTime iso={a.at} now={data.now} />
          </Td>
          <Td wrap className="min-w-24">
            {a.actor}
          </Td>
          <Td>{a.action}</Td>
          {/* The console's name for the database the action ran on; none when written outside a console. */}
          <Td>{a.database ?? "—"}</Td>
          <Td wrap className="min-w-40">
            <Target target={a.target} />
          </Td>
          <Td wrap>{a.reason ?? "—"}</Td>
          <Td wrap>
            <Badge>{String(a.result.status ?? "ok")}</Badge>
            <div className="mt-1 text-xs break-all text-slate-700">{summary(a.result)}</div>
          </Td>
        </tr>
      )}
    />
  );
}
