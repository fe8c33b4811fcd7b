import type { Metadata } from "next";
import { OverviewLive } from "@/components/overview-live";
import { PageHeader } from "@/components/ui";
import { consolePool } from "@/lib/console/db";
import { overview } from "@/lib/console/overview";
import { requireViewer } from "@/lib/console/session";

export const metadata: Metadata = { title: "Overview" };

export default async function OverviewPage() {
  await requireViewer();
  const data = await overview(await consolePool());
  return (
    <>
      <PageHeader title="Overview" description="What the queue decided lately, and what it holds now." />
      <OverviewLive initial={data} />
    </>
  );
}
