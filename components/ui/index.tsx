/** Presentational primitives (server- and client-safe). Colours chosen for WCAG AA on white. */

import type { CSSProperties, ReactNode } from "react";
import { Link } from "@/components/db-link";
import { shortId } from "@/lib/console/wire/format";

/**
 * For text that may hold a user-supplied value (a queue name, a filter value echoed in an error):
 * a long unbroken value wraps anywhere instead of widening the page (and, unlike `break-words`, it
 * also narrows the element's min-content width, so a grid or flex item holding it shrinks too).
 * Notice, Field's messages, PageHeader and EmptyState use it.
 */
export const echoClass = "wrap-anywhere";

export function cx(...parts: (string | false | null | undefined)[]): string {
  return parts.filter(Boolean).join(" ");
}

export function PageHeader({
  title,
  description,
  actions,
}: {
  title: string;
  description?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
      <div className={cx("min-w-0", echoClass)}>
        <h1 className="text-2xl font-semibold tracking-tight text-slate-900">{title}</h1>
        {description ? <p className="mt-1 max-w-3xl text-sm text-slate-600">{description}</p> : null}
      </div>
      {actions ? <div className="flex flex-wrap gap-2">{actions}</div> : null}
    </div>
  );
}

/** A page header's link back to the list the page belongs to: "← All jobs". */
export function BackLink({ href, label }: { href: string; label: string }) {
  return (
    <Link className={linkClass} href={href}>
      {`← ${label}`}
    </Link>
  );
}

export function Card({ title, children, className }: { title?: ReactNode; children: ReactNode; className?: string }) {
  return (
    <section className={cx("rounded-lg border border-slate-200 bg-white p-4 shadow-sm", className)}>
      {title ? <h2 className="mb-3 text-base font-semibold text-slate-900">{title}</h2> : null}
      {children}
    </section>
  );
}

export function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: ReactNode }) {
  return (
    <div className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <div className="text-sm text-slate-600">{label}</div>
      <div className="mt-1 text-2xl font-semibold tabular-nums text-slate-900">{value}</div>
      {hint ? <div className="mt-1 text-xs text-slate-600">{hint}</div> : null}
    </div>
  );
}

const STATE_STYLES: Record<string, string> = {
  scheduled: "bg-indigo-100 text-indigo-900",
  ready: "bg-sky-100 text-sky-900",
  active: "bg-amber-100 text-amber-900",
  succeeded: "bg-emerald-100 text-emerald-900",
  failed: "bg-red-100 text-red-900",
  canceled: "bg-slate-200 text-slate-800",
  purged: "bg-zinc-200 text-zinc-800",
  accepted: "bg-emerald-100 text-emerald-900",
  replayed: "bg-sky-100 text-sky-900",
  conflict: "bg-red-100 text-red-900",
  coalesced: "bg-violet-100 text-violet-900",
  non_replaceable: "bg-orange-100 text-orange-900",
  replaced: "bg-violet-100 text-violet-900",
  retrying: "bg-orange-100 text-orange-900",
  overdue: "bg-red-100 text-red-900",
  "lease expired": "bg-amber-100 text-amber-900",
  live: "bg-emerald-100 text-emerald-900",
  expired: "bg-amber-100 text-amber-900",
  ok: "bg-emerald-100 text-emerald-900",
  refused: "bg-red-100 text-red-900",
};

export function Badge({ children, tone }: { children: ReactNode; tone?: string }) {
  const key = tone ?? (typeof children === "string" ? children : "");
  return (
    <span
      className={cx(
        "inline-flex items-center rounded px-1.5 py-0.5 text-xs font-medium whitespace-nowrap",
        STATE_STYLES[key] ?? "bg-slate-100 text-slate-800",
      )}
    >
      {children}
    </span>
  );
}

/** A CSS string literal: `"..."` with quotes, backslashes and line breaks escaped. */
function cssString(text: string): string {
  return `"${text.replace(/[\\"\n\r]/g, (c) => `\\${c.charCodeAt(0).toString(16)} `)}"`;
}

/**
 * A data table. Below 640 px wide (phones) it stacks into one card per row instead of scrolling
 * sideways: each cell on its own line, labelled with its column's heading, in column order, so the
 * first columns (the ones that matter) lead each card. The headings reach the cells' labels as the
 * custom properties `--col-1`, `--col-2`, ... (globals.css, `.stack-table`; a style attribute,
 * which the Content-Security-Policy allows, where an inline style element would need its nonce).
 */
export function Table({ caption, head, children }: { caption: string; head: string[]; children: ReactNode }) {
  const labels = Object.fromEntries(head.map((h, i) => [`--col-${i + 1}`, cssString(h)])) as CSSProperties;
  return (
    <div className="relative overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
      <table className="stack-table min-w-full divide-y divide-slate-200 text-sm" style={labels}>
        <caption className="sr-only">{caption}</caption>
        <thead className="bg-slate-50">
          <tr>
            {head.map((h) => (
              <th key={h} scope="col" className="px-3 py-2 text-left font-semibold whitespace-nowrap text-slate-700">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100 [&>tr:focus-within]:bg-sky-50">{children}</tbody>
      </table>
    </div>
  );
}

/** Cells do not wrap (narrow screens scroll the table sideways) unless `wrap` is set. */
export function Td({ children, className, wrap }: { children: ReactNode; className?: string; wrap?: boolean }) {
  return (
    <td
      className={cx(
        "px-3 py-2 align-top text-slate-800",
        wrap ? "max-w-md break-words whitespace-normal" : "whitespace-nowrap",
        wrap && !className?.includes("min-w-") ? "min-w-48" : null,
        className,
      )}
    >
      {children}
    </td>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className={cx("rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center", echoClass)}>
      <p className="font-medium text-slate-900">{title}</p>
      {children ? <div className="mt-2 text-sm text-slate-600">{children}</div> : null}
    </div>
  );
}

export { DemoHint } from "../read-only";

export function Notice({
  tone = "info",
  children,
  role,
}: {
  tone?: "info" | "warn" | "error" | "ok";
  children: ReactNode;
  role?: string;
}) {
  const styles = {
    info: "border-sky-300 bg-sky-50 text-sky-950",
    warn: "border-amber-300 bg-amber-50 text-amber-950",
    error: "border-red-300 bg-red-50 text-red-950",
    ok: "border-emerald-300 bg-emerald-50 text-emerald-950",
  }[tone];
  return (
    <div role={role} className={cx("rounded-md border px-3 py-2 text-sm", echoClass, styles)}>
      {children}
    </div>
  );
}

export function Skeleton({ rows = 6 }: { rows?: number }) {
  return (
    <div role="status" aria-live="polite" className="space-y-2">
      <span className="sr-only">Loading…</span>
      {Array.from({ length: rows }, (_, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: static placeholders
        <div key={i} className="h-8 animate-pulse rounded bg-slate-200" />
      ))}
    </div>
  );
}

export const inputClass =
  "block w-full rounded-md border border-slate-400 bg-white px-2.5 py-1.5 text-sm text-slate-900 placeholder:text-slate-500 focus:border-blue-700 focus:outline-2 focus:outline-blue-700";
export const buttonClass =
  "inline-flex items-center justify-center rounded-md bg-blue-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-blue-800 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-700 disabled:opacity-60";
export const secondaryButtonClass =
  "inline-flex items-center justify-center rounded-md border border-slate-400 bg-white px-3 py-1.5 text-sm font-medium text-slate-900 hover:bg-slate-50 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-700";
export const dangerButtonClass =
  "inline-flex items-center justify-center rounded-md bg-red-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-red-800 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-red-700 disabled:opacity-60";
export const linkClass = "text-blue-700 underline-offset-2 hover:underline";

export function Field({
  label,
  name,
  error,
  hint,
  children,
}: {
  label: string;
  name: string;
  error?: string;
  hint?: string;
  children: ReactNode;
}) {
  return (
    <div>
      <label htmlFor={name} className="mb-1 block text-sm font-medium text-slate-900">
        {label}
      </label>
      {children}
      {hint && !error ? (
        <p id={`${name}-hint`} className={cx("mt-1 text-xs text-slate-600", echoClass)}>
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={`${name}-error`} className={cx("mt-1 text-sm text-red-800", echoClass)}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

export function Mono({ children }: { children: ReactNode }) {
  return <code className="font-mono text-xs break-all text-slate-900">{children}</code>;
}

/**
 * An id (or other code-like text) that is a link: mono like `Mono`, but in the link colour and
 * underlined, so it reads as a link (a `Mono` inside a link keeps its own dark text colour and looks
 * like plain text).
 */
export function MonoLink({ href, children }: { href: string; children: ReactNode }) {
  return (
    <Link className={`${linkClass} font-mono text-xs break-all underline`} href={href}>
      {children}
    </Link>
  );
}

export function DefinitionList({ items }: { items: [string, ReactNode][] }) {
  return (
    <dl className="grid grid-cols-[minmax(6rem,max-content)_1fr] gap-x-4 gap-y-2 text-sm">
      {items.map(([k, v]) => (
        <div key={k} className="contents">
          <dt className="font-medium text-slate-600">{k}</dt>
          <dd className="min-w-0 break-words text-slate-900">{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A key digest that opens Find by key on everything known under it. */
export function DigestLink({ digest }: { digest: string }) {
  return (
    <Link
      href={`/find?digest=${encodeURIComponent(digest)}`}
      className="font-mono text-xs whitespace-nowrap text-blue-700 underline underline-offset-2"
      title="Everything under this key digest"
    >
      {digest}
    </Link>
  );
}

/** A job id as a short monospace link to its page (full id on hover), or "—" when there is none. */
export function JobLink({ id, className = "text-xs" }: { id: string | null | undefined; className?: string }) {
  if (!id) return <>—</>;
  return (
    <Link className={`${linkClass} font-mono ${className}`} href={`/jobs/${id}`} title={id}>
      {shortId(id)}
    </Link>
  );
}
