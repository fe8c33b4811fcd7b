import type { Metadata } from "next";
import { PageHeader } from "@/components/ui";
import { WorkersLive } from "@/components/workers-live";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { listWorkers } from "@/lib/console/reads/workers";

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
