"use client";
import { createContext, type ReactNode, useContext } from "react";
import { Link } from "@/components/db-link";

const ReadOnly = createContext(false);

/** Tells client components below it that the console refuses mutations, so they hide them. */
export function ReadOnlyProvider({ readOnly, children }: { readOnly: boolean; children: ReactNode }) {
  return <ReadOnly.Provider value={readOnly}>{children}</ReadOnly.Provider>;
}

export function useReadOnly(): boolean {
  return useContext(ReadOnly);
}

/** The empty-state hint: demo traffic, and (unless read-only) the enqueue form. */
export function DemoHint() {
  const readOnly = useReadOnly();
  return (
    <>
      Run <code className="rounded bg-slate-100 px-1 py-0.5 text-slate-900">npm run demo</code> in another terminal to
      fill the console with realistic traffic
      {readOnly ? null : (
        <>
          , or{" "}
          <Link className="text-blue-700 underline" href="/enqueue">
            enqueue a test job
          </Link>
        </>
      )}
      .
    </>
  );
}
