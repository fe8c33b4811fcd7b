"use client";
import { useEffect } from "react";
import { buttonClass, Notice, PageHeader } from "@/components/ui";

/** Unexpected failures (the database is down, a bug): a message and a retry, never a stack trace. */
export default function ConsoleError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => {
    console.error("console page failed", error.digest ?? "");
  }, [error]);
  return (
    <>
      <PageHeader title="This page could not be loaded" />
      <div className="space-y-3">
        <Notice tone="error" role="alert">
          Something went wrong while reading from the database. It may be restarting or unreachable.
          {error.digest ? (
            <>
              {" "}
              Reference <code className="font-mono">{error.digest}</code> (in the server log).
            </>
          ) : null}
        </Notice>
        <button type="button" className={buttonClass} onClick={() => reset()}>
          Try again
        </button>
      </div>
    </>
  );
}
