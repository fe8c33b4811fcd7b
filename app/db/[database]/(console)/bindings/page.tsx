import type { Metadata } from "next";
import { BindingsTable } from "@/components/bindings-table";
import { Link } from "@/components/db-link";
import { FilterForm, FilterSelect, FilterText } from "@/components/filter-form";
import { cx, PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { listBindings } from "@/lib/console/reads/bindings";
import { parseBindingFilters, toQuery } from "@/lib/console/reads/filters";
import { BINDING_MODES } from "@/lib/console/wire/types";

export const metadata: Metadata = { title: "Bindings" };

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function BindingsPage({ searchParams }: { searchParams: Search }) {
  await requireViewer();
  const sp = await searchParams;
  const f = parseBindingFilters(sp);
  const page = await listBindings(await consolePool(), f);
  const after = f.after ? `${f.after.expiresAtUs}_${f.after.jobId}` : undefined;
  const query = toQuery({ status: f.status, scope: f.scope, mode: f.mode, after });
  const tab = (status: "live" | "expired", label: string) => (
    <Link
      href={`/bindings${toQuery({ status, scope: f.scope, mode: f.mode })}`}
      aria-current={f.status === status ? "page" : undefined}
      className={cx(
        "rounded-md px-3 py-1.5 text-sm font-medium",
        f.status === status
          ? "bg-slate-900 text-white"
          : "border border-slate-400 bg-white text-slate-900 hover:bg-slate-50",
      )}
    >
      {label}
    </Link>
  );
  return (
    <>
      <PageHeader
        title="Bindings"
        description="Which scoped keys own which jobs. Live bindings, soonest to expire first; expired ones await the cleanup that maintenance runs."
      />
      <nav className="mb-3 flex flex-wrap gap-2" aria-label="Binding status">
        {tab("live", "Live")}
        {tab("expired", "Expired, awaiting cleanup")}
      </nav>
      <FilterForm
        action="/bindings"
        label="Filter bindings"
        columns={4}
        filtered={!!(f.scope || f.mode)}
        clearHref={`/bindings?status=${f.status}`}
      >
        <input type="hidden" name="status" value={f.status} />
        <FilterText id="b-scope" name="scope" label="Scope starts with" value={f.scope} />
        <FilterSelect id="b-mode" name="mode" label="Mode" value={f.mode} options={BINDING_MODES} />
      </FilterForm>
      <BindingsTable initial={page} query={query} filtered={!!(f.scope || f.mode)} />
    </>
  );
}
