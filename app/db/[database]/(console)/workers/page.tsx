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
        description="Every running worker, idle or busy: each one checks in every heartbeat interval with its queues, concurrency and the jobs in hand. A worker that misses three check-ins is shown as gone (its jobs go back to the queue when their leases lapse); maintenance removes it after 15 minutes."
      />
      <WorkersLive initial={data} />
    </>
  );
}
