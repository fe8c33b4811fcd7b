import { DatabaseForm } from "@/components/db-link";
import { buttonClass, inputClass } from "@/components/ui";

/**
 * "Open job": a job id (whole, or its first or last hex digits) sent to `/jobs?id=…` in the page's
 * database, where lib/console/reads/open-job.ts resolves it. On the overview it is the page's search box
 * (`search`: the `/` key focuses it).
 */
export function OpenJobForm({
  inputId,
  className,
  fieldClassName,
  search = false,
}: {
  inputId: string;
  className: string;
  fieldClassName?: string;
  search?: boolean;
}) {
  return (
    <DatabaseForm method="get" action="/jobs" className={className} aria-label="Open a job by id">
      <div className={fieldClassName}>
        <label htmlFor={inputId} className="mb-1 block text-sm font-medium text-slate-900">
          Job id
        </label>
        <input
          id={inputId}
          name="id"
          {...(search ? { "data-search": true } : {})}
          className={inputClass}
          placeholder="Id, or its first or last hex digits"
          autoComplete="off"
          spellCheck={false}
        />
      </div>
      <button type="submit" className={buttonClass}>
        Open job
      </button>
    </DatabaseForm>
  );
}
