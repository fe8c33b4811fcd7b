"use client";
import Link from "next/link";
import { useActionState } from "react";
import type { FindKeyState } from "@/lib/console/action-state";
import { formatTime } from "@/lib/console/format";
import { DEFAULT_SCOPE } from "@/lib/enqueue/client";
import { BindingDetails } from "./binding-card";
import { Badge, buttonClass, Card, DefinitionList, DigestLink, Field, inputClass, linkClass, Notice } from "./ui";

/** `action`: the find-by-key server action, passed down by the page (components never import from app/). */
export function FindKeyForm({
  action: findByKey,
}: {
  action: (prev: FindKeyState, data: FormData) => Promise<FindKeyState>;
}) {
  const [state, action, pending] = useActionState<FindKeyState, FormData>(findByKey, { status: "idle" });
  const errors = state.status === "error" ? state.fieldErrors : {};
  const lastScope = state.status === "found" || state.status === "none" ? state.scope : undefined;
  return (
    <div className="grid gap-4 lg:grid-cols-5">
      <form action={action} className="lg:col-span-2" aria-label="Find a job by idempotency key">
        <Card>
          <div className="space-y-4">
            <Field label="Scope" name="scope" error={errors.scope} hint={`Default "${DEFAULT_SCOPE}"`}>
              <input
                id="scope"
                name="scope"
                key={lastScope}
                defaultValue={lastScope}
                placeholder={DEFAULT_SCOPE}
                className={inputClass}
                autoComplete="off"
                spellCheck={false}
              />
            </Field>
            <Field
              label="Key"
              name="key"
              error={errors.key}
              hint="Hashed on the server and compared by hash; never stored, logged or shown."
            >
              <input
                id="key"
                name="key"
                required
                className={inputClass}
                autoComplete="off"
                spellCheck={false}
                aria-invalid={!!errors.key}
              />
            </Field>
            <button type="submit" className={buttonClass} disabled={pending}>
              {pending ? "Looking up…" : "Find"}
            </button>
          </div>
        </Card>
      </form>
      <section aria-labelledby="answer" aria-live="polite" className="lg:col-span-3">
        <Card title={<span id="answer">Answer</span>}>
          <Answer state={state} />
        </Card>
      </section>
    </div>
  );
}

function Answer({ state }: { state: FindKeyState }) {
  if (state.status === "idle")
    return <p className="text-sm text-slate-600">Enter a scope and key to see which job owns it.</p>;
  if (state.status === "error") {
    return (
      <Notice tone="error" role="alert">
        {state.message}
      </Notice>
    );
  }
  if (state.status === "found") {
    const b = state.binding;
    return (
      <div className="space-y-4" data-testid="find-answer">
        <p className="text-sm">
          {b.expired ? (
            <>
              <Badge>expired</Badge> No live binding: the key expired at <strong>{formatTime(b.expiresAt)}</strong> and
              awaits cleanup. The next request with it creates a new job.
            </>
          ) : (
            <>
              <Badge>live</Badge> The key is bound to job{" "}
              <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${b.jobId}`}>
                {b.jobId}
              </Link>
              .
            </>
          )}
        </p>
        {state.job ? (
          <DefinitionList
            items={[
              [
                "Job",
                <Link key="j" className={`${linkClass} font-mono text-xs`} href={`/jobs/${state.job.id}`}>
                  {state.job.id}
                </Link>,
              ],
              ["State", <Badge key="s">{state.job.state}</Badge>],
              ["Type", state.job.type],
              ["Queue", state.job.queue],
              ["Created", formatTime(state.job.createdAt)],
            ]}
          />
        ) : null}
        <h3 className="text-sm font-semibold text-slate-900">Binding</h3>
        <BindingDetails binding={b} now={state.now} showJob />
      </div>
    );
  }
  const h = state.history;
  return (
    <div className="space-y-3" data-testid="find-answer">
      <p className="text-sm font-medium text-slate-900">No live binding for this key in scope “{state.scope}”.</p>
      <p className="text-sm text-slate-700">
        {h.kind === "released" ? (
          <>
            It was released when job{" "}
            <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${h.jobId}`}>
              {h.jobId}
            </Link>{" "}
            was purged{h.purgedAt ? ` at ${formatTime(h.purgedAt)}` : ""}.
          </>
        ) : h.kind === "expired_cleaned" ? (
          <>
            It expired{h.expiredAt ? ` at ${formatTime(h.expiredAt)}` : ""} and was cleaned up. It last belonged to job{" "}
            <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${h.jobId}`}>
              {h.jobId}
            </Link>
            .
          </>
        ) : h.kind === "never_seen" ? (
          <>No job was ever enqueued with this key in this scope (as far as job history goes).</>
        ) : (
          <>
            It was never bound, was released by a purge, or expired and was cleaned up (the history search took too long
            to say which).
          </>
        )}
      </p>
      <DefinitionList
        items={[
          ["Key digest", <DigestLink key="d" digest={state.keyDigest} />],
          ["Key length", `${state.keyLength} characters`],
        ]}
      />
    </div>
  );
}
