import type { Metadata } from "next";
import { EmptyState, Notice, PageHeader, secondaryButtonClass, Table, Td } from "@/components/ui";
import { listSessions, SESSION_IDLE_MS, SESSION_MAX_MS } from "@/lib/console/auth/session-store";
import { currentFingerprint, requireViewer } from "@/lib/console/auth/viewer";
import { primaryDb } from "@/lib/console/databases/db";
import { formatTime } from "@/lib/console/wire/format";
import { signOutEverywhere } from "./actions";

export const metadata: Metadata = { title: "Sessions" };

export default async function SessionsPage() {
  const viewer = await requireViewer();
  const fingerprint = currentFingerprint();
  const description = `Who is signed in. A session ends at sign-out, after ${SESSION_IDLE_MS / 3_600_000} h without a request, ${SESSION_MAX_MS / 3_600_000} h after sign-in, or when the password changes.`;
  if (viewer.passwordless || !fingerprint) {
    return (
      <>
        <PageHeader title="Sessions" description={description} />
        <Notice tone="info">No password is set, so this console has no sign-in and no sessions.</Notice>
      </>
    );
  }
  const sessions = await listSessions(primaryDb().pool, fingerprint);
  return (
    <>
      <PageHeader
        title="Sessions"
        description={description}
        actions={
          <form action={signOutEverywhere}>
            <button type="submit" className={secondaryButtonClass}>
              Sign out everywhere
            </button>
          </form>
        }
      />
      {sessions.length === 0 ? (
        <EmptyState title="No live sessions" />
      ) : (
        <Table caption="Live console sessions" head={["Who", "Signed in", "Last seen", "Ends", "Address", "Session"]}>
          {sessions.map((s) => (
            <tr key={s.ref}>
              <Td>
                {s.actor}
                {s.ref === viewer.sessionRef ? <span className="ml-2 text-xs text-slate-600">(you, here)</span> : null}
              </Td>
              <Td>{formatTime(s.createdAt.toISOString())}</Td>
              <Td>{formatTime(s.lastSeenAt.toISOString())}</Td>
              <Td>{formatTime(s.idleExpiresAt.toISOString())}</Td>
              <Td>{s.clientAddress ?? "—"}</Td>
              <Td className="font-mono text-xs">{s.ref}</Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
