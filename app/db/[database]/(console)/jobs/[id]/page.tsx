import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { JobActions } from "@/components/job-actions";
import { JobLive } from "@/components/job-live";
import { PayloadCard } from "@/components/payload-card";
import { PurgeDialog } from "@/components/purge-dialog";
import { BackLink, PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { UUID_RE } from "@/lib/console/reads/filters";
import { jobDetail, jobPayload } from "@/lib/console/reads/jobs";
import { cancelJobsAction, purgeJobAction, redriveAction, runNowAction } from "../actions";

export const metadata: Metadata = { title: "Job" };

export default async function JobPage({ params }: { params: Promise<{ id: string }> }) {
  const viewer = await requireViewer();
  const { id } = await params;
  const pool = await consolePool();
  const [job, payload] = UUID_RE.test(id)
    ? await Promise.all([jobDetail(pool, id.toLowerCase()), jobPayload(pool, id.toLowerCase())])
    : [null, null];
  if (!job) notFound(); // ./not-found.tsx, with HTTP status 404
  return (
    <>
      <PageHeader
        title={job.type}
        description={
          <>
            Job <span className="font-mono">{job.id}</span> on queue <strong>{job.queue}</strong>
          </>
        }
        actions={<BackLink href="/jobs" label="All jobs" />}
      />
      <JobLive
        initial={job}
        payload={payload ? <PayloadCard jobId={job.id} payload={payload} /> : null}
        purge={
          viewer.readOnly ? (
            <p className="text-sm text-slate-600">Read-only mode: cancel, run now, redrive and purge are disabled.</p>
          ) : (
            <JobActions
              jobId={job.id}
              cancel={cancelJobsAction}
              runNow={runNowAction}
              redrive={redriveAction}
              purge={
                <PurgeDialog
                  action={purgeJobAction}
                  hidden={{ jobId: job.id }}
                  label="Purge job…"
                  title="Purge this job?"
                  description={
                    job.binding
                      ? "The job becomes a tombstone (state purged) and its idempotency binding is released, so the same key can enqueue new work. This cannot be undone."
                      : "The job becomes a tombstone (state purged). It holds no key binding, so none is released. This cannot be undone."
                  }
                />
              }
            />
          )
        }
      />
    </>
  );
}
