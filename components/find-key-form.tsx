"use client";
import { DEFAULT_SCOPE } from "@workhorse/core/client";
import { useActionState, useState } from "react";
import { Link } from "@/components/db-link";
import type { FindKeyState, KeyElsewhere, KeyWhitespace } from "@/lib/console/wire/action-state";
import { formatTime } from "@/lib/console/wire/format";
import { BindingDetails } from "./binding-card";
import { KeyEverywhereTable } from "./key-everywhere";
import { Badge, buttonClass, Card, DefinitionList, DigestLink, Field, inputClass, linkClass, Notice } from "./ui";

/** `action`: the find-by-key server action, passed down by the page (components never import from app/). */
export function FindKeyForm({
  action: findByKey,
}: {
  action: (prev: FindKeyState, data: FormData) => Promise<FindKeyState>;
}) {
  const [state, action, pending] = useActionState<FindKeyState, FormData>(findByKey, { status: "idle" });
  const errors = state.status === "error" ? state.fieldErrors : {};
  // Kept in the browser across lookups (a form action resets its inputs; the server never returns the key).
  const [key, setKey] = useState("");
  const [scope, setScope] = useState("");
  return (
    <div className="grid gap-4 lg:grid-cols-5">
      <form action={action} className="lg:col-span-2" aria-label="Find a job by idempotency key">
        <Card>
          <div className="space-y-4">
            <Field label="Scope" name="scope" error={errors.scope} hint={`Default "${DEFAULT_SCOPE}"`}>
              <input
                id="scope"
                name="scope"
                value={scope}
                onChange={(e) => setScope(e.target.value)}
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
                value={key}
                onChange={(e) => setKey(e.target.value)}
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
          <Answer state={state} onScope={setScope} onTrim={() => setKey((k) => k.trim())} />
        </Card>
        {(state.status === "found" || state.status === "none") && state.everywhere ? (
          <div className="mt-4">
            <KeyEverywhereTable rows={state.everywhere} what="key" />
          </div>
        ) : null}
      </section>
    </div>
  );
}

/** The key as typed had whitespace around it: keys are compared exactly, so it counts. */
function WhitespaceNote({ w, onTrim }: { w: KeyWhitespace; onTrim: () => void }) {
  const parts = [w.leading ? `${w.leading} leading` : null, w.trailing ? `${w.trailing} trailing` : null].filter(
    Boolean,
  );
  return (
    <Notice tone="warn" role="status">
      The key has {parts.join(" and ")} whitespace character{w.leading + w.trailing === 1 ? "" : "s"}; keys are compared
      exactly, so they are part of it.{" "}
      <button type="button" className={linkClass} onClick={onTrim}>
        Remove them from the key box
      </button>
    </Notice>
  );
}

/** Where the key does have a binding, when not in the scope asked. */
function Elsewhere({ e, onScope }: { e: KeyElsewhere; onScope: (s: string) => void }) {
  if (e.matches.length === 0) {
    return (
      <p className="text-sm text-slate-700">
        Not bound in any other scope either ({e.scopesSearched} scope{e.scopesSearched === 1 ? "" : "s"} searched
        {e.searchedAll ? "" : "; only the first ones by name"}).
      </p>
    );
  }
  return (
    <div className="space-y-2 text-sm" data-testid="key-elsewhere">
      <p className="font-medium text-slate-900">
        {e.trimmed ? "Without the surrounding whitespace, the key" : "The key"} has a binding in{" "}
        {e.matches.length === 1 ? "this scope" : "these scopes"}:
      </p>
      <ul className="space-y-1">
        {e.matches.map((m) => (
          <li key={m.scope} className="flex flex-wrap items-center gap-2">
            <button type="button" className={linkClass} onClick={() => onScope(m.scope)}>
              Use scope “{m.scope}”
            </button>
            <span className="text-slate-700">
              {m.expired ? "expired binding of job" : "bound to job"}{" "}
              <Link className={`${linkClass} font-mono text-xs`} href={`/jobs/${m.jobId}`}>
                {m.jobId}
              </Link>
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}

function Answer({
  state,
  onScope,
  onTrim,
}: {
  state: FindKeyState;
  onScope: (scope: string) => void;
  onTrim: () => void;
}) {
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
        {state.whitespace ? <WhitespaceNote w={state.whitespace} onTrim={onTrim} /> : null}
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
      {state.whitespace ? <WhitespaceNote w={state.whitespace} onTrim={onTrim} /> : null}
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
      {state.elsewhere ? <Elsewhere e={state.elsewhere} onScope={onScope} /> : null}
    </div>
  );
}
