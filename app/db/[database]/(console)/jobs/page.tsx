import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { Link } from "@/components/db-link";
import { FilterForm, FilterText } from "@/components/filter-form";
import { JobsBulk } from "@/components/jobs-bulk";
import { JobsTable } from "@/components/jobs-table";
import { OpenJobForm } from "@/components/open-job-form";
import { StateTabs } from "@/components/state-tabs";
import { linkClass, Notice, PageHeader, secondaryButtonClass } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool, databasePath } from "@/lib/console/databases/db";
import { parseJobFilters, toQuery } from "@/lib/console/reads/filters";
import { listJobs, stateTabCounts } from "@/lib/console/reads/jobs";
import { resolveJobId } from "@/lib/console/reads/open-job";
import { MAX_BULK_JOBS } from "@/lib/console/reads/operator-reads";
import { cancelJobsAction, countMatchingAction, purgeSelectedAction, redriveAction, runNowAction } from "./actions";

export const metadata: Metadata = { title: "Jobs" };

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function JobsPage({ searchParams }: { searchParams: Search }) {
  const viewer = await requireViewer();
  const sp = await searchParams;
  const pool = await consolePool();
  const rawId = typeof sp.id === "string" ? sp.id.trim() : "";
  let idNotice: React.ReactNode = null;
  if (rawId) {
    const r = await resolveJobId(pool, rawId);
    if (r.kind === "found") redirect(await databasePath(`/jobs/${r.id}`));
    idNotice =
      r.kind === "invalid" ? (
        "That is not a job id. Paste a whole id (a UUID such as 01a2…-…) or at least 6 of its hex digits from its start or end (tables show the last 8, …ab93e3f1; the worker log the last 12)."
      ) : r.kind === "none" ? (
        "No job has that id, and no job id starts or ends with it (an ending needs at least 8 hex digits)."
      ) : (
        <>
          That matches {r.more ? `more than ${r.ids.length}` : r.ids.length} jobs; paste more of the id. Matching:{" "}
          {r.ids.map((id, i) => (
            <span key={id}>
              {i > 0 ? ", " : ""}
              <Link className={linkClass} href={`/jobs/${id}`}>
                <span className="font-mono text-xs">{id}</span>
              </Link>
            </span>
          ))}
          {r.more ? ", …" : ""}
        </>
      );
  }
  const f = parseJobFilters(sp);
  const [page, tabs] = await Promise.all([listJobs(pool, f), stateTabCounts(pool, f)]);
  const base = {
    queue: f.queue,
    type: f.type,
    tag: f.tag,
    error: f.error ? "1" : undefined,
    due: f.due ? "1" : undefined,
  };
  const query = toQuery({ ...base, state: f.state, after: f.after, before: f.before });
  const filtered = !!(f.queue || f.type || f.state || f.tag || f.error || f.due);
  return (
    <>
      <PageHeader
        title="Jobs"
        description="Newest first. Filter by queue, type or tag (each matches names that start with what you type), pick a state, or open a job by its id."
        actions={
          viewer.readOnly ? undefined : (
            <Link className={secondaryButtonClass} href="/enqueue">
              Enqueue a test job
            </Link>
          )
        }
      />
      <OpenJobForm
        inputId="id"
        className="mb-3 flex flex-wrap items-end gap-2"
        fieldClassName="min-w-0 grow sm:max-w-md"
      />
      {idNotice ? (
        <div className="mb-3">
          <Notice tone="warn" role="alert">
            {idNotice}
          </Notice>
        </div>
      ) : null}
      <FilterForm action="/jobs" label="Filter jobs" columns={5} filtered={filtered}>
        <FilterText id="f-queue" name="queue" label="Queue starts with" value={f.queue} />
        <FilterText id="f-type" name="type" label="Type starts with" value={f.type} />
        <FilterText id="f-tag" name="tag" label="Tag starts with" value={f.tag} />
        {f.state ? <input type="hidden" name="state" value={f.state} /> : null}
        <div className="flex flex-col gap-1 self-center sm:pt-6">
          <div className="flex items-center gap-2">
            <input
              id="f-error"
              name="error"
              type="checkbox"
              value="1"
              defaultChecked={f.error}
              className="h-4 w-4 accent-blue-700"
            />
            <label htmlFor="f-error" className="text-sm font-medium text-slate-900">
              Has error
            </label>
          </div>
          <div className="flex items-center gap-2">
            <input
              id="f-due"
              name="due"
              type="checkbox"
              value="1"
              defaultChecked={f.due}
              className="h-4 w-4 accent-blue-700"
              aria-describedby="f-due-hint"
            />
            <label htmlFor="f-due" className="text-sm font-medium text-slate-900">
              Due now
            </label>
            <span id="f-due-hint" className="sr-only">
              pending jobs whose run time has come: ready, and scheduled ones past their run time
            </span>
          </div>
        </div>
      </FilterForm>
      <StateTabs counts={tabs.counts} current={f.state} hrefFor={(state) => `/jobs${toQuery({ ...base, state })}`} />
      {viewer.readOnly ? (
        <JobsTable key={query} initial={page} query={query} filtered={filtered} />
      ) : (
        <JobsBulk
          key={[f.queue, f.type, f.state, f.tag, f.error, f.due].join("\u001f")}
          filter={{ ...base, state: f.state }}
          countMatching={countMatchingAction}
          cap={MAX_BULK_JOBS}
          cancel={cancelJobsAction}
          runNow={runNowAction}
          redrive={redriveAction}
          purge={purgeSelectedAction}
        >
          <JobsTable key={query} initial={page} query={query} filtered={filtered} />
        </JobsBulk>
      )}
    </>
  );
}
