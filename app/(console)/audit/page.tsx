import type { Metadata } from "next";
import Link from "next/link";
import { AuditTable } from "@/components/audit-table";
import { buttonClass, inputClass, linkClass, PageHeader } from "@/components/ui";
import { listAudit } from "@/lib/console/audit";
import { consolePool } from "@/lib/console/db";
import { AUDIT_ACTIONS, parseAuditFilters, toQuery } from "@/lib/console/filters";
import { requireViewer } from "@/lib/console/session";

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
      <form
        method="get"
        action="/audit"
        className="mb-4 grid grid-cols-2 gap-2 sm:grid-cols-4 sm:items-end"
        aria-label="Filter audit log"
      >
        <div>
          <label htmlFor="a-action" className="mb-1 block text-sm font-medium text-slate-900">
            Action
          </label>
          <select id="a-action" name="action" defaultValue={f.action ?? ""} className={inputClass}>
            <option value="">Any</option>
            {AUDIT_ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="a-actor" className="mb-1 block text-sm font-medium text-slate-900">
            Actor
          </label>
          <input id="a-actor" name="actor" defaultValue={f.actor} className={inputClass} />
        </div>
        <div className="flex gap-2">
          <button type="submit" className={buttonClass}>
            Filter
          </button>
          {filtered ? (
            <Link className={`${linkClass} self-center text-sm`} href="/audit">
              Clear
            </Link>
          ) : null}
        </div>
      </form>
      <AuditTable initial={page} query={query} filtered={filtered} />
    </>
  );
}
