import type { Metadata } from "next";
import { AuditTable } from "@/components/audit-table";
import { FilterForm, FilterSelect, FilterText } from "@/components/filter-form";
import { PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { listAudit } from "@/lib/console/reads/audit";
import { AUDIT_ACTIONS, parseAuditFilters, toQuery } from "@/lib/console/reads/filters";

export const metadata: Metadata = { title: "Audit log" };

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function AuditPage({ searchParams }: { searchParams: Search }) {
  await requireViewer();
  const f = parseAuditFilters(await searchParams);
  const page = await listAudit(await consolePool(), f);
  const after = f.after ? `${f.after.at}_${f.after.id}` : undefined;
  const query = toQuery({ action: f.action, actor: f.actor, after });
  const filtered = !!(f.action || f.actor);
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Every operator action: who, what, on which target, why, and how it ended."
      />
      <FilterForm action="/audit" label="Filter audit log" columns={4} filtered={filtered}>
        <FilterSelect id="a-action" name="action" label="Action" value={f.action} options={AUDIT_ACTIONS} />
        <FilterText id="a-actor" name="actor" label="Actor" value={f.actor} />
      </FilterForm>
      <AuditTable initial={page} query={query} filtered={filtered} />
    </>
  );
}
