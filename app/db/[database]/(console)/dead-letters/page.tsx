import { EnqueueValidationError } from "@workhorse/core";
import type { Metadata } from "next";
import { Link } from "@/components/db-link";
import { DeadLetterGroups } from "@/components/dead-letter-groups";
import { DeadLetterJobs } from "@/components/dead-letter-jobs";
import { BackLink, linkClass, PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consoleDb, consolePool } from "@/lib/console/databases/db";
import { deadLetterGroups } from "@/lib/console/reads/operator-reads";
import { redriveAction } from "../jobs/actions";
import { deleteDeadLettersAction } from "./actions";

export const metadata: Metadata = { title: "Dead letters" };

/** Most failed jobs one group deletion takes (newest first), as for a group redrive. */
const MAX_GROUP_DELETE = 10_000;

type Search = Promise<Record<string, string | string[] | undefined>>;

const one = (v: string | string[] | undefined): string | undefined =>
  typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;

export default async function DeadLettersPage({ searchParams }: { searchParams: Search }) {
  const viewer = await requireViewer();
  const sp = await searchParams;
  const queue = one(sp.queue);
  const type = one(sp.type);
  const errorName = one(sp.errorName);
  const cursor = one(sp.cursor);
  const withRedriven = one(sp.redriven) === "1";
  if (queue && type && errorName) {
    const { queue: core } = await consoleDb();
    let page: Awaited<ReturnType<typeof core.listDeadLetters>>;
    try {
      page = await core.listDeadLetters({
        queue,
        type,
        errorName,
        limit: 50,
        includeRedriven: withRedriven,
        ...(cursor ? { cursor } : {}),
      });
    } catch (err) {
      if (!(err instanceof EnqueueValidationError)) throw err;
      page = { jobs: [], nextCursor: null };
    }
    const plain = `/dead-letters?${new URLSearchParams({ queue, type, errorName }).toString()}`;
    const base = withRedriven ? `${plain}&redriven=1` : plain;
    return (
      <>
        <PageHeader
          title="Dead letters"
          description={
            <>
              Failed jobs of queue <strong>{queue}</strong>, type <strong>{type}</strong>, error{" "}
              <strong>{errorName}</strong>, newest first.{" "}
              {withRedriven
                ? "Jobs redriven already are listed too, each with the job its redrive made."
                : "Jobs redriven already are left out: their redriven jobs carry on."}
            </>
          }
          actions={<BackLink href="/dead-letters" label="All groups" />}
        />
        <DeadLetterJobs
          jobs={page.jobs.map((j) => ({
            id: j.id,
            finishedAt: j.finishedAt ? j.finishedAt.toISOString() : null,
            attempt: j.attempt,
            message: errorMessage(j.lastError),
            redrivenTo: j.redriveJobIds.at(-1) ?? null,
          }))}
          redrive={viewer.readOnly ? null : redriveAction}
          remove={viewer.readOnly ? null : deleteDeadLettersAction}
        />
        <div className="mt-3 flex flex-wrap gap-4 text-sm">
          <Link className={linkClass} href={withRedriven ? plain : `${plain}&redriven=1`}>
            {withRedriven ? "Hide jobs redriven already" : "Show jobs redriven already"}
          </Link>
          {cursor ? (
            <Link className={linkClass} href={base}>
              First page
            </Link>
          ) : null}
          {page.nextCursor ? (
            <Link className={linkClass} href={`${base}&cursor=${encodeURIComponent(page.nextCursor)}`}>
              Older failures →
            </Link>
          ) : null}
        </div>
      </>
    );
  }

  const { groups, bounded } = await deadLetterGroups(await consolePool());
  return (
    <>
      <PageHeader
        title="Dead letters"
        description="Failed jobs (attempts exhausted or deadline passed), grouped by queue, type and error. Open a group to see its jobs; redrive a group or a selection after a dry run."
      />
      {bounded ? (
        <p className="mb-3 text-sm text-slate-700" data-testid="dead-letter-bound">
          Grouped from the newest {bounded.scanned.toLocaleString("en-US")} failed jobs: counts are lower bounds, and a
          group whose jobs are all older is not listed. A group's page, its redrive dry run and its deletion read the
          whole group.
        </p>
      ) : null}
      {/* Always mounted (it shows the empty state itself): a redrive that empties the list keeps its dialog. */}
      <DeadLetterGroups
        groups={groups}
        redrive={viewer.readOnly ? null : redriveAction}
        remove={viewer.readOnly ? null : deleteDeadLettersAction}
        maxGroupDelete={MAX_GROUP_DELETE}
        atLeast={bounded !== null}
      />
    </>
  );
}

function errorMessage(lastError: unknown): string | null {
  if (lastError && typeof lastError === "object" && "message" in lastError) {
    const m = (lastError as { message?: unknown }).message;
    return typeof m === "string" ? m.slice(0, 300) : null;
  }
  return null;
}
