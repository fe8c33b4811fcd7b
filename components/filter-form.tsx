import type { ReactNode } from "react";
import { DatabaseForm, Link } from "@/components/db-link";
import { buttonClass, cx, inputClass, linkClass } from "@/components/ui";

// Static class names, so Tailwind sees them.
const COLUMNS = { 4: "sm:grid-cols-4", 5: "sm:grid-cols-5" } as const;

/**
 * The GET filter form every list page has: labelled fields, a Filter button, and a Clear link
 * (to `clearHref`) while any filter is set. Filters live in the URL, so pages can be shared.
 */
export function FilterForm({
  action,
  label,
  columns,
  filtered,
  clearHref = action,
  children,
}: {
  action: string;
  label: string;
  columns: keyof typeof COLUMNS;
  filtered: boolean;
  clearHref?: string;
  children: ReactNode;
}) {
  return (
    <DatabaseForm
      method="get"
      action={action}
      className={cx("mb-4 grid grid-cols-2 gap-2 sm:items-end", COLUMNS[columns])}
      aria-label={label}
    >
      {children}
      <div className="flex gap-2">
        <button type="submit" className={buttonClass}>
          Filter
        </button>
        {filtered ? (
          <Link className={`${linkClass} self-center text-sm`} href={clearHref}>
            Clear
          </Link>
        ) : null}
      </div>
    </DatabaseForm>
  );
}

export function FilterText({
  id,
  name,
  label,
  value,
  type = "text",
}: {
  id: string;
  name: string;
  label: string;
  value?: string;
  type?: "text" | "datetime-local";
}) {
  return (
    <div>
      <label htmlFor={id} className="mb-1 block text-sm font-medium text-slate-900">
        {label}
      </label>
      <input id={id} name={name} type={type} defaultValue={value} className={inputClass} />
    </div>
  );
}

/** A select whose first option ("Any") clears the filter. Options are values, or [value, text]. */
export function FilterSelect({
  id,
  name,
  label,
  value,
  anyLabel = "Any",
  options,
}: {
  id: string;
  name: string;
  label: string;
  value?: string | null;
  anyLabel?: string;
  options: readonly (string | readonly [string, string])[];
}) {
  return (
    <div>
      <label htmlFor={id} className="mb-1 block text-sm font-medium text-slate-900">
        {label}
      </label>
      <select id={id} name={name} defaultValue={value ?? ""} className={inputClass}>
        <option value="">{anyLabel}</option>
        {options.map((o) => {
          const [v, text] = typeof o === "string" ? [o, o] : o;
          return (
            <option key={v} value={v}>
              {text}
            </option>
          );
        })}
      </select>
    </div>
  );
}
