import type { Metadata } from "next";
import { EnqueueForm } from "@/components/enqueue-form";
import { Notice, PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { listWorkers } from "@/lib/console/reads/workers";
import { enqueueTestJobAction } from "./actions";

export const metadata: Metadata = { title: "Enqueue test job" };

export default async function EnqueuePage() {
  const viewer = await requireViewer();
  return (
    <>
      <PageHeader
        title="Enqueue a test job"
        description="Goes through the same enqueue path as producers do. Every submission is recorded in the audit log under your name."
      />
      {viewer.readOnly ? (
        <Notice tone="info">The console is read-only: enqueueing is disabled.</Notice>
      ) : (
        <EnqueueForm action={enqueueTestJobAction} workers={await listWorkers(await consolePool())} />
      )}
    </>
  );
}
