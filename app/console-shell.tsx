import { headers } from "next/headers";
import { notFound } from "next/navigation";
import { type ReactNode, Suspense } from "react";
import { signOut } from "@/app/sign-in/actions";
import { DatabaseSwitcher } from "@/components/database-switcher";
import { DatabaseProvider } from "@/components/db-link";
import { KeyboardShortcuts } from "@/components/keyboard-shortcuts";
import { Nav } from "@/components/nav";
import { ReadOnlyProvider } from "@/components/read-only";
import { LiveIndicator } from "@/components/refresh-policy";
import { PATH_HEADER } from "@/lib/console/auth/request-info";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consoleDatabases, currentDatabase, openDatabase } from "@/lib/console/databases/db";
import { consolePathMissing } from "@/lib/console/reads/open-queue";
import { DATABASE_IN_URL_HEADER } from "@/lib/console/wire/database-paths";

/**
 * The console's frame (header with the database and its switcher, navigation, banners) around a
 * page: a database's pages (`fleet` false) or the pages over every database (`fleet`, e.g. /fleet).
 */
export async function ConsoleShell({ children, fleet }: { children: ReactNode; fleet: boolean }) {
  const viewer = await requireViewer();
  // Above the pages' loading boundary: a job or queue page that finds no job or queue answers 404, not 200.
  const h = await headers();
  const path = h.get(PATH_HEADER) ?? "";
  const database = await currentDatabase();
  if (!fleet && (await consolePathMissing(openDatabase(database).pool, path))) notFound();
  // Links stay under the database the URL names; a URL naming none (one database) keeps plain paths.
  const prefix = fleet || h.get(DATABASE_IN_URL_HEADER) !== "1" ? null : database.name;
  const choices = consoleDatabases().map(({ name, production, readonly }) => ({ name, production, readonly }));
  const shown = fleet ? null : database;
  return (
    <DatabaseProvider database={prefix} production={shown?.production ? shown.name : null}>
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
            <div className="mb-2">
              <Suspense fallback={null}>
                <DatabaseSwitcher current={shown?.name ?? null} databases={choices} />
              </Suspense>
            </div>
            <Nav readOnly={viewer.readOnly} signIn={!viewer.passwordless} fleet={choices.length > 1} />
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
        {shown?.production ? (
          <div role="note" className="border-b border-red-300 bg-red-100 px-3 py-2 text-center text-sm text-red-950">
            <strong>{shown.name}</strong> is a production database: destructive actions ask you to type its name.
          </div>
        ) : null}
        {shown?.readonly && !viewer.readOnly ? (
          <div role="note" className="border-b border-sky-300 bg-sky-100 px-3 py-2 text-center text-sm text-sky-950">
            <strong>{shown.name}</strong> is read-only (configured <code className="font-mono">readonly</code>): every
            change is refused and nothing is written.
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
    </DatabaseProvider>
  );
}
