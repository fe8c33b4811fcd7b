import type { Metadata } from "next";
import { DatabaseForm } from "@/components/db-link";
import { HealthChart } from "@/components/health-chart";
import { OverviewLive } from "@/components/overview-live";
import { buttonClass, inputClass, PageHeader } from "@/components/ui";
import { consolePool } from "@/lib/console/db";
import { overview } from "@/lib/console/overview";
import { series } from "@/lib/console/series";
import { requireViewer } from "@/lib/console/viewer";

export const metadata: Metadata = { title: "Overview" };

export default async function OverviewPage() {
  await requireViewer();
  const db = await consolePool();
  const [data, lastHour] = await Promise.all([overview(db), series(db, "1h")]);
  return (
    <>
      <PageHeader
        title="Overview"
        description="What the queue decided lately, and what it holds now."
        actions={
          // The page's search box: `/` focuses it, as on the other pages.
          <DatabaseForm method="get" action="/jobs" className="flex items-end gap-2" aria-label="Open a job by id">
            <div>
              <label htmlFor="overview-id" className="mb-1 block text-sm font-medium text-slate-900">
                Job id
              </label>
              <input
                id="overview-id"
                name="id"
                data-search
                className={inputClass}
                placeholder="Id, or its first or last hex digits"
                autoComplete="off"
                spellCheck={false}
              />
            </div>
            <button type="submit" className={buttonClass}>
              Open job
            </button>
          </DatabaseForm>
        }
      />
      <div className="space-y-6">
        <HealthChart initial={lastHour} />
        <OverviewLive initial={data} />
      </div>
    </>
  );
}
