import type { Metadata } from "next";
import { PageHeader } from "@/components/ui";
import { WorkersLive } from "@/components/workers-live";
import { consolePool } from "@/lib/console/db";
import { requireViewer } from "@/lib/console/viewer";
import { listWorkers } from "@/lib/console/workers";

export const metadata: Metadata = { title: "Workers" };

export default async function WorkersPage() {
  await requireViewer();
  const data = await listWorkers(await consolePool());
  return (
    <>
      <PageHeader
        title="Workers"
        description="Who is running what, read from the leases on active jobs. A worker renews its leases while it runs; when every lease of a worker has lapsed, it has stopped and other workers will run its jobs again."
      />
      <WorkersLive initial={data} />
    </>
  );
}
