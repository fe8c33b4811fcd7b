import { Link } from "@/components/db-link";
import { EmptyState, linkClass, PageHeader } from "@/components/ui";

export default function JobNotFound() {
  return (
    <>
      <PageHeader title="Job not found" />
      <EmptyState title="No job has this id, or it is not a job id (a UUID).">
        <Link className={linkClass} href="/jobs">
          Back to jobs
        </Link>
      </EmptyState>
    </>
  );
}
