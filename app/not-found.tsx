import { headers } from "next/headers";
import { Link } from "@/components/db-link";
import { QueueNotFound } from "@/components/queue-not-found";
import { PATH_HEADER } from "@/lib/console/auth/request-info";
import { queuePath } from "@/lib/console/reads/open-queue";
import { pagePath } from "@/lib/console/wire/database-paths";

export default async function NotFound() {
  const path = (await headers()).get(PATH_HEADER) ?? "";
  const job = pagePath(path).startsWith("/jobs/");
  const queue = queuePath(path);
  return (
    <main className="mx-auto max-w-xl px-4 py-16">
      {queue ? (
        <QueueNotFound named={queue} />
      ) : (
        <>
          <h1 className="text-2xl font-semibold text-slate-900">{job ? "Job not found" : "Page not found"}</h1>
          <p className="mt-2 text-slate-700">
            {job ? "No job has this id, or it is not a job id (a UUID)." : "There is no console page at this address."}
          </p>
          {job ? (
            <Link className="mt-4 mr-4 inline-block text-blue-700 underline" href="/jobs">
              Back to jobs
            </Link>
          ) : null}
        </>
      )}
      <Link className="mt-4 inline-block text-blue-700 underline" href="/">
        Go to the overview
      </Link>
    </main>
  );
}
