import { headers } from "next/headers";
import { notFound } from "next/navigation";
import type { ReactNode } from "react";
import { signOut } from "@/app/sign-in/actions";
import { KeyboardShortcuts } from "@/components/keyboard-shortcuts";
import { Nav } from "@/components/nav";
import { ReadOnlyProvider } from "@/components/read-only";
import { LiveIndicator } from "@/components/refresh-policy";
import { consolePool } from "@/lib/console/db";
import { consolePathMissing } from "@/lib/console/open-queue";
import { PATH_HEADER } from "@/lib/console/request-info";
import { requireViewer } from "@/lib/console/viewer";

export const dynamic = "force-dynamic";

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const viewer = await requireViewer();
  // Above the pages' loading boundary: a job or queue page that finds no job or queue answers 404, not 200.
  const path = (await headers()).get(PATH_HEADER) ?? "";
  const db = await consolePool();
  if (await consolePathMissing(db, path)) notFound();
  return (
    <div className="min-h-screen">
      <header className="bg-chrome text-chrome-fg">
        <div className="mx-auto max-w-7xl px-3 pt-3 sm:px-6">
          <div className="mb-2 flex flex-wrap items-center justify-between gap-2">
            <div className="flex items-center gap-2">
              <span className="text-lg font-semibold">Workhorse</span>
              <span className="text-sm text-chrome-muted">operations console</span>
            </div>
            <div className="flex flex-wrap items-center gap-3 text-xs text-chrome-muted">
              <LiveIndicator />
              <span>
                Signed in as <strong className="text-chrome-fg">{viewer.actor}</strong>
              </span>
              {viewer.passwordless ? null : (
                <form action={signOut}>
                  <button
                    type="submit"
                    className="rounded border border-chrome-muted px-1.5 py-0.5 hover:bg-chrome-hover"
                  >
                    Sign out
                  </button>
                </form>
              )}
            </div>
          </div>
          <Nav readOnly={viewer.readOnly} signIn={!viewer.passwordless} />
        </div>
      </header>
      {viewer.passwordless ? (
        <div
          role="note"
          className="border-b border-amber-300 bg-amber-100 px-3 py-2 text-center text-sm text-amber-950"
        >
          No password is set: this console accepts connections from this machine only (loopback). Set{" "}
          <code className="font-mono">WORKHORSE_CONSOLE_PASSWORD</code> to require sign-in.
        </div>
      ) : null}
      {viewer.readOnly ? (
        <div role="note" className="border-b border-sky-300 bg-sky-100 px-3 py-2 text-center text-sm text-sky-950">
          Read-only mode (<code className="font-mono">WORKHORSE_CONSOLE_READONLY=1</code>): enqueueing test jobs,
          cancel, run now, redrive, purge, pausing and resuming queues, and maintenance runs are disabled.
        </div>
      ) : null}
      <main className="mx-auto max-w-7xl px-3 py-6 sm:px-6">
        <ReadOnlyProvider readOnly={viewer.readOnly}>{children}</ReadOnlyProvider>
      </main>
      <KeyboardShortcuts />
    </div>
  );
}
