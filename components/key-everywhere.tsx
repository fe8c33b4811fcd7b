import NextLink from "next/link";
import type { KeyEverywhere } from "@/lib/console/wire/types";
import { Badge, Card, linkClass, Table, Td } from "./ui";

const LABEL: Record<KeyEverywhere[number]["status"], string> = {
  found: "Found",
  none: "Not here",
  down: "Down",
  slow: "Slow",
};

/** Where a key (or digest) lives, one row per configured database; links open the job in its database. */
export function KeyEverywhereTable({ rows, what }: { rows: KeyEverywhere; what: string }) {
  const found = rows.filter((r) => r.status === "found").length;
  return (
    <Card title="In every database">
      <p className="mb-3 text-sm text-slate-700" role="status">
        {found === 0 ? `No database holds this ${what}.` : `${found} of ${rows.length} databases hold this ${what}.`}
      </p>
      <Table caption={`The ${what} in every database`} head={["Database", "Result", "Job", "Detail"]}>
        {rows.map((r) => (
          <tr key={r.database} data-database={r.database}>
            <Td>{r.database}</Td>
            <Td>
              <Badge tone={r.status === "found" ? "ok" : r.status === "none" ? "neutral" : "error"}>
                {LABEL[r.status]}
              </Badge>
            </Td>
            <Td>
              {r.jobId ? (
                <NextLink className={`${linkClass} font-mono text-xs`} href={`/db/${r.database}/jobs/${r.jobId}`}>
                  {r.jobId}
                </NextLink>
              ) : (
                "–"
              )}
            </Td>
            <Td wrap>
              {[r.jobState, r.queue ? `queue ${r.queue}` : null, r.message].filter(Boolean).join(" · ") || "–"}
            </Td>
          </tr>
        ))}
      </Table>
    </Card>
  );
}
