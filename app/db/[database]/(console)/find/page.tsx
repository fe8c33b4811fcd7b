import type { Metadata } from "next";
import { DatabaseForm } from "@/components/db-link";
import { DigestResult } from "@/components/digest-result";
import { FindKeyForm } from "@/components/find-key-form";
import { KeyEverywhereTable } from "@/components/key-everywhere";
import { buttonClass, Card, Field, inputClass, Notice, PageHeader } from "@/components/ui";
import { requestInfo, requireViewer } from "@/lib/console/auth/viewer";
import { consoleDatabases, consolePool, openDatabase } from "@/lib/console/databases/db";
import { digestParam, lookupDigestLimited } from "@/lib/console/reads/digest";
import { findDigestEverywhere } from "@/lib/console/reads/find-everywhere";
import { findByKeyAction } from "./actions";

export const metadata: Metadata = { title: "Find by key" };

export default async function FindPage({ searchParams }: { searchParams: Promise<Record<string, string | string[]>> }) {
  const viewer = await requireViewer();
  const sp = await searchParams;
  const { raw, digest } = digestParam(sp.digest);
  // Per session (per client address without sign-in): each lookup costs the database a search.
  const lookup = digest
    ? await lookupDigestLimited(
        await consolePool(),
        digest,
        viewer.sessionRef ?? `address:${(await requestInfo()).clientAddress}`,
      )
    : null;
  const result = lookup?.status === "ok" ? lookup.result : null;
  // Several databases: the digest in each (within the same rate limit: one lookup, every database).
  const databases = consoleDatabases();
  const everywhere =
    lookup?.status === "ok" && digest && databases.length > 1
      ? await findDigestEverywhere(databases, openDatabase, digest)
      : null;
  return (
    <>
      <PageHeader
        title="Find a job by key"
        description="For support: paste the idempotency key a customer's request used, or the 12-character key digest an application logged. The key lookup is a POST; the key is hashed on the server and never appears in a URL, a page or a log."
      />
      <div className="space-y-6">
        {raw ? null : <FindKeyForm action={findByKeyAction} />}
        <section aria-labelledby="by-digest" className="space-y-4">
          <h2 id="by-digest" className="text-base font-semibold text-slate-900">
            By key digest
          </h2>
          <DatabaseForm method="get" action="/find" aria-label="Find by key digest">
            <Card>
              <div className="flex flex-wrap items-end gap-3">
                <div className="w-full max-w-xs">
                  <Field
                    label="Key digest"
                    name="digest"
                    hint="12 hex characters, e.g. from EnqueueIdempotencyConflictError.keyDigest"
                    error={raw && !digest ? "A key digest is 12 hex characters (0-9, a-f)." : undefined}
                  >
                    <input
                      id="digest"
                      name="digest"
                      defaultValue={raw.slice(0, 64)}
                      className={`${inputClass} font-mono`}
                      autoComplete="off"
                      spellCheck={false}
                      inputMode="text"
                      aria-invalid={raw !== "" && !digest}
                    />
                  </Field>
                </div>
                <button type="submit" className={buttonClass}>
                  Look up digest
                </button>
              </div>
            </Card>
          </DatabaseForm>
          {lookup?.status === "limited" ? (
            <Notice tone="error" role="alert">
              {lookup.message}
            </Notice>
          ) : result ? (
            <>
              {everywhere ? <KeyEverywhereTable rows={everywhere} what="digest" /> : null}
              <DigestResult data={result} />
            </>
          ) : raw && !digest ? (
            <Notice tone="error" role="alert">
              That is not a key digest: enter the 12 hex characters an application logged.
            </Notice>
          ) : null}
        </section>
        {raw ? <FindKeyForm action={findByKeyAction} /> : null}
      </div>
    </>
  );
}
