import type { Metadata } from "next";
import { HealthChart } from "@/components/health-chart";
import { OpenJobForm } from "@/components/open-job-form";
import { OverviewLive } from "@/components/overview-live";
import { PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { overview } from "@/lib/console/reads/overview";
import { series } from "@/lib/console/reads/series";

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
          <OpenJobForm inputId="overview-id" className="flex items-end gap-2" search />
        }
      />
      <div className="space-y-6">
        <HealthChart initial={lastHour} />
        <OverviewLive initial={data} />
      </div>
    </>
  );
}
