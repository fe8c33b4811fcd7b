import type { Metadata } from "next";
import Link from "next/link";
import { redirect } from "next/navigation";
import { FilterForm, FilterSelect, FilterText } from "@/components/filter-form";
import { JobsBulk } from "@/components/jobs-bulk";
import { JobsTable } from "@/components/jobs-table";
import { buttonClass, inputClass, Notice, PageHeader, secondaryButtonClass } from "@/components/ui";
import { consolePool } from "@/lib/console/db";
import { parseJobFilters, toQuery, UUID_RE } from "@/lib/console/filters";
import { listJobs } from "@/lib/console/jobs";
import { MAX_BULK_JOBS } from "@/lib/console/operator-reads";
import { requireViewer } from "@/lib/console/session";
import { JOB_STATES } from "@/lib/console/types";
import { cancelJobsAction, countMatchingAction, purgeSelectedAction, redriveAction, runNowAction } from "./actions";

export const metadata: Metadata = { title: "Jobs" };

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function JobsPage({ searchParams }: { searchParams: Search }) {
  const viewer = await requireViewer();
  const sp = await searchParams;
  const pool = await consolePool();
  const rawId = typeof sp.id === "string" ? sp.id.trim() : "";
  let idNotice: string | null = null;
  if (rawId) {
    if (!UUID_RE.test(rawId)) idNotice = "That is not a job id. Job ids are UUIDs such as 019a…-…";
    else {
      const { rowCount } = await pool.query("select 1 from workhorse.job where id = $1::uuid", [rawId.toLowerCase()]);
      if (rowCount) redirect(`/jobs/${rawId.toLowerCase()}`);
      idNotice = "No job has that id.";
    }
  }
  const f = parseJobFilters(sp);
  const page = await listJobs(pool, f);
  const query = toQuery({ queue: f.queue, type: f.type, state: f.state, tag: f.tag, after: f.after, before: f.before });
  const filtered = !!(f.queue || f.type || f.state || f.tag);
  return (
    <>
      <PageHeader
        title="Jobs"
        description="Newest first. Filter by queue, type, state or tag, or open a job by its id."
        actions={
          viewer.readOnly ? undefined : (
            <Link className={secondaryButtonClass} href="/enqueue">
              Enqueue a test job
            </Link>
          )
        }
      />
      <form method="get" action="/jobs" className="mb-3 flex flex-wrap items-end gap-2" aria-label="Open a job by id">
        <div className="min-w-0 grow sm:max-w-md">
          <label htmlFor="id" className="mb-1 block text-sm font-medium text-slate-900">
            Job id
          </label>
          <input id="id" name="id" className={inputClass} placeholder="UUID" autoComplete="off" spellCheck={false} />
        </div>
        <button type="submit" className={buttonClass}>
          Open job
        </button>
      </form>
      {idNotice ? (
        <div className="mb-3">
          <Notice tone="warn" role="alert">
            {idNotice}
          </Notice>
        </div>
      ) : null}
      <FilterForm action="/jobs" label="Filter jobs" columns={5} filtered={filtered}>
        <FilterText id="f-queue" name="queue" label="Queue" value={f.queue} />
        <FilterText id="f-type" name="type" label="Type" value={f.type} />
        <FilterSelect id="f-state" name="state" label="State" value={f.state} options={JOB_STATES} />
        <FilterText id="f-tag" name="tag" label="Tag" value={f.tag} />
      </FilterForm>
      {viewer.readOnly ? (
        <JobsTable initial={page} query={query} filtered={filtered} />
      ) : (
        <JobsBulk
          key={[f.queue, f.type, f.state, f.tag].join("\u001f")}
          filter={{ queue: f.queue, type: f.type, state: f.state, tag: f.tag }}
          countMatching={countMatchingAction}
          cap={MAX_BULK_JOBS}
          cancel={cancelJobsAction}
          runNow={runNowAction}
          redrive={redriveAction}
          purge={purgeSelectedAction}
        >
          <JobsTable initial={page} query={query} filtered={filtered} />
        </JobsBulk>
      )}
    </>
  );
}
