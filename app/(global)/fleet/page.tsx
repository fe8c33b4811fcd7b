import type { Metadata } from "next";
import NextLink from "next/link";
import { PageHeader, Table, Td } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consoleDatabases, openDatabase } from "@/lib/console/databases/db";
import { FLEET_COUNT_CAP, FLEET_TIMEOUT_MS, type FleetEntry, readFleet } from "@/lib/console/reads/fleet";
import { formatDuration } from "@/lib/console/wire/format";

export const metadata: Metadata = { title: "Fleet" };

const STATUS: Record<FleetEntry["status"], { label: string; className: string }> = {
  ok: { label: "Up", className: "bg-emerald-100 text-emerald-900" },
  old: { label: "Schema behind", className: "bg-amber-100 text-amber-950" },
  missing: { label: "No schema", className: "bg-amber-100 text-amber-950" },
  newer: { label: "Schema ahead", className: "bg-amber-100 text-amber-950" },
  down: { label: "Down", className: "bg-red-100 text-red-900" },
  slow: { label: "Slow", className: "bg-red-100 text-red-900" },
};

const n = (v: number) => v.toLocaleString("en-US");
/** A count that stopped at the cap reads "1,000+". */
const counted = (v: number, capped: boolean) => (capped ? `${n(v)}+` : n(v));

export default async function FleetPage() {
  await requireViewer();
  const fleet = await readFleet(consoleDatabases(), openDatabase);
  return (
    <>
      <PageHeader
        title="Fleet"
        description={`Every configured database at a glance, each read at once with its own ${n(FLEET_TIMEOUT_MS)} ms limit: one that is down, slow or on another schema says so here while the others answer. Ready counts due jobs waiting for a worker; oldest ready is how long the longest-waiting one has waited; conflicts and replays are the last hour's. Ready and dead letters are counted up to ${n(FLEET_COUNT_CAP)} ("${n(FLEET_COUNT_CAP)}+" past it): the database's own pages count them all.`}
      />
      <Table
        caption="Databases"
        head={[
          "Database",
          "State",
          "Ready",
          "Oldest ready",
          "Dead letters",
          "Conflicts (1 h)",
          "Replays (1 h)",
          "Workers",
          "Schema",
        ]}
      >
        {fleet.map((d) => {
          const s = STATUS[d.status];
          const f = d.figures;
          return (
            <tr key={d.name} data-database={d.name}>
              <Td>
                <NextLink className="font-medium text-blue-700 underline" href={`/db/${d.name}`}>
                  {d.name}
                </NextLink>
                {d.production ? <span className="ml-2 text-xs font-semibold text-red-800">production</span> : null}
                {d.readonly ? <span className="ml-2 text-xs text-slate-600">read-only</span> : null}
              </Td>
              <Td wrap>
                <span className={`rounded px-1.5 py-0.5 text-xs font-semibold ${s.className}`}>{s.label}</span>
                {d.message ? <p className="mt-1 text-xs break-words text-slate-700">{d.message}</p> : null}
              </Td>
              <Td className="tabular-nums">{f ? counted(f.ready, f.readyCapped) : "–"}</Td>
              <Td className="tabular-nums">
                {f ? (f.ready > 0 ? formatDuration(f.oldestReadySeconds * 1000) : "none waiting") : "–"}
              </Td>
              <Td className="tabular-nums">{f ? counted(f.deadLetters, f.deadLettersCapped) : "–"}</Td>
              <Td className="tabular-nums">{f ? n(f.conflictsLastHour) : "–"}</Td>
              <Td className="tabular-nums">{f ? n(f.replaysLastHour) : "–"}</Td>
              <Td className="tabular-nums">{f ? n(f.workers) : "–"}</Td>
              <Td className="tabular-nums">{d.schemaVersion ?? "–"}</Td>
            </tr>
          );
        })}
      </Table>
    </>
  );
}
