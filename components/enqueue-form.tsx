"use client";
import { useQuery } from "@tanstack/react-query";
import { DEFAULT_QUEUE, DEFAULT_SCOPE, LIMITS } from "@workhorse/core/client";
import { type FormEvent, startTransition, useActionState, useState } from "react";
import { Link } from "@/components/db-link";
import type { EnqueueFormState, FieldErrors } from "@/lib/console/wire/action-state";
import { ENQUEUE_FIELDS as F, MAX_PAYLOAD_TEXT_BYTES, payloadTooLarge } from "@/lib/console/wire/enqueue-fields";
import { liveUrl } from "@/lib/console/wire/live-urls";
import { explainOutcome, KEY_LABELS, type KeyModeName, REASON_LABELS } from "@/lib/console/wire/outcome-text";
import { queueWorkersNote, workersTaking } from "@/lib/console/wire/queue-workers";
import type { WorkersDto } from "@/lib/console/wire/types";
import { LIVE_INTERVAL_MS, useRefreshPolicy } from "./refresh-policy";
import { Badge, buttonClass, Card, DefinitionList, DigestLink, Field, inputClass, linkClass, Mono, Notice } from "./ui";
import { getJson } from "./use-live";

/**
 * The enqueue-test form. Submitting keeps the values in the browser (nothing is echoed back by the
 * server, least of all the key), so pressing Enqueue again repeats the same request: `replayed`.
 */
type Mode = KeyModeName;

const MODE_HINTS: Record<Mode, string> = {
  idempotency: "A repeat with the same key and request returns the first job; a different request is a conflict.",
  debounce: "Repeats inside the window rewrite the waiting job (same id); it runs once the repeats stop.",
  throttle: "The first request in a window makes the job; equal repeats until the window closes get that job.",
};

/** The fields that belong to a key mode: each mode keeps its own values (a debounce window is never a TTL). */
type ModeField = "ttlMs" | "holdUntil" | "windowMs" | "schedule" | "maxWaitMs" | "runAt";

/**
 * `action`: the enqueue-test-job server action, passed down by the page (components never import
 * from app/). `workers`: the workers' check-ins at render time (the Workers page's data), polled.
 */
export function EnqueueForm({
  action: enqueueTestJobAction,
  workers,
}: {
  action: (prev: EnqueueFormState, data: FormData) => Promise<EnqueueFormState>;
  workers: WorkersDto;
}) {
  const [state, action, pending] = useActionState<EnqueueFormState, FormData>(enqueueTestJobAction, {
    status: "idle",
  });
  // Set in the browser when the payload is too large to send at all (what the operator typed stays).
  const [tooLarge, setTooLarge] = useState<string | null>(null);
  const [mode, setMode] = useState<Mode>("idempotency");
  // What was typed into each mode's own fields; a mode's inputs are remounted from it when shown.
  const [modeValues, setModeValues] = useState<Record<Mode, Partial<Record<ModeField, string>>>>({
    idempotency: {},
    debounce: {},
    throttle: {},
  });
  const [queueName, setQueueName] = useState("");
  const [jobType, setJobType] = useState("console.test");
  const errors: FieldErrors = {
    ...(state.status === "error" && !tooLarge ? state.fieldErrors : {}),
    ...(tooLarge ? { payload: tooLarge } : {}),
  };
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const payload = data.get("payload");
    const bytes = typeof payload === "string" ? new TextEncoder().encode(payload).length : 0;
    if (bytes > MAX_PAYLOAD_TEXT_BYTES) {
      setTooLarge(payloadTooLarge(bytes));
      return;
    }
    setTooLarge(null);
    data.set("tzOffset", String(new Date().getTimezoneOffset()));
    startTransition(() => action(data));
  };
  const input = (name: string, props: React.InputHTMLAttributes<HTMLInputElement> = {}, key?: string) => (
    <input
      key={key}
      id={name}
      name={name}
      className={inputClass}
      aria-invalid={!!errors[name]}
      aria-describedby={errors[name] ? `${name}-error` : undefined}
      autoComplete="off"
      spellCheck={false}
      {...props}
    />
  );
  /** A field of the current mode only: keyed by mode, starting from what was typed in it in this mode. */
  const keep = (name: ModeField) => ({
    defaultValue: modeValues[mode][name] ?? "",
    onChange: (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => {
      const value = e.target.value;
      setModeValues((all) => ({ ...all, [mode]: { ...all[mode], [name]: value } }));
    },
  });
  const modeInput = (name: ModeField, props: React.InputHTMLAttributes<HTMLInputElement> = {}) =>
    input(name, { ...props, ...keep(name) }, `${mode}-${name}`);
  return (
    <div className="grid gap-4 lg:grid-cols-5">
      <form action={action} onSubmit={onSubmit} className="space-y-4 lg:col-span-3" aria-label="Enqueue a test job">
        <Card>
          <div className="grid gap-4 sm:grid-cols-2">
            <Field label={F.type.label} name="type" error={errors.type} hint={F.type.hint}>
              {input("type", {
                required: true,
                defaultValue: "console.test",
                onChange: (e) => setJobType(e.target.value),
              })}
            </Field>
            <Field label={F.queue.label} name="queue" error={errors.queue} hint={F.queue.hint}>
              {input("queue", { placeholder: DEFAULT_QUEUE, onChange: (e) => setQueueName(e.target.value) })}
            </Field>
            <div className="sm:col-span-2">
              <QueueWorkers initial={workers} queue={queueName.trim() || DEFAULT_QUEUE} type={jobType.trim()} />
            </div>
            <div className="sm:col-span-2">
              <Field label={`${F.payload.label} (JSON)`} name="payload" error={errors.payload}>
                <textarea
                  id="payload"
                  name="payload"
                  rows={6}
                  defaultValue={'{\n  "hello": "world"\n}'}
                  className={`${inputClass} font-mono`}
                  aria-invalid={!!errors.payload}
                  aria-describedby={errors.payload ? "payload-error" : undefined}
                  spellCheck={false}
                />
              </Field>
            </div>
            <div className="sm:col-span-2">
              <Field label={F.mode.label} name="mode" error={errors.mode} hint={MODE_HINTS[mode]}>
                <select
                  id="mode"
                  name="mode"
                  value={mode}
                  onChange={(e) => setMode(e.target.value as Mode)}
                  className={inputClass}
                  aria-invalid={!!errors.mode}
                >
                  <option value="idempotency">Idempotency: a repeat returns the same job</option>
                  <option value="debounce">Debounce: repeats replace the pending job</option>
                  <option value="throttle">Throttle: at most one job per window</option>
                </select>
              </Field>
            </div>
            <Field
              label={KEY_LABELS[mode]}
              name="key"
              error={errors.key}
              hint={`${mode === "idempotency" ? "Optional. " : "Required. "}Hashed on the server; never stored or shown.`}
            >
              {input("key")}
            </Field>
            <Field label={F.scope.label} name="scope" error={errors.scope} hint={F.scope.hint}>
              {input("scope", { placeholder: DEFAULT_SCOPE })}
            </Field>
            {mode === "idempotency" ? (
              <Field label={`${F.ttlMs.label} (ms)`} name="ttlMs" error={errors.ttlMs} hint={F.ttlMs.hint}>
                {modeInput("ttlMs", { inputMode: "numeric", placeholder: String(LIMITS.defaultTtlMs) })}
              </Field>
            ) : (
              <Field
                label={`${F.windowMs.label} (ms)`}
                name="windowMs"
                error={errors.windowMs}
                hint={
                  mode === "debounce"
                    ? `${F.windowMs.hint} The job runs when the window closes.`
                    : `${F.windowMs.hint} Repeats inside it get the same job.`
                }
              >
                {modeInput("windowMs", { inputMode: "numeric", placeholder: "60000", required: true })}
              </Field>
            )}
            {mode === "throttle" ? null : (
              <Field label={F.holdUntil.label} name="holdUntil" error={errors.holdUntil} hint={F.holdUntil.hint}>
                <select
                  key={`${mode}-holdUntil`}
                  id="holdUntil"
                  name="holdUntil"
                  className={inputClass}
                  {...keep("holdUntil")}
                  defaultValue={modeValues[mode].holdUntil ?? ""}
                >
                  <option value="">the TTL alone</option>
                  <option value="finished">until the job finishes</option>
                  <option value="started">until the job starts</option>
                </select>
              </Field>
            )}
            {mode === "debounce" ? (
              <>
                <Field label={F.schedule.label} name="schedule" error={errors.schedule} hint={F.schedule.hint}>
                  <select
                    key={`${mode}-schedule`}
                    id="schedule"
                    name="schedule"
                    className={inputClass}
                    {...keep("schedule")}
                    defaultValue={modeValues[mode].schedule ?? "reset"}
                  >
                    <option value="reset">reset</option>
                    <option value="preserve">preserve</option>
                  </select>
                </Field>
                <Field
                  label={`${F.maxWaitMs.label} (ms)`}
                  name="maxWaitMs"
                  error={errors.maxWaitMs}
                  hint={F.maxWaitMs.hint}
                >
                  {modeInput("maxWaitMs", { inputMode: "numeric", placeholder: "300000" })}
                </Field>
              </>
            ) : null}
            {mode === "debounce" ? null : (
              <Field label={F.runAt.label} name="runAt" error={errors.runAt} hint={F.runAt.hint}>
                {modeInput("runAt", { type: "datetime-local", step: 1 })}
              </Field>
            )}
            <Field label={F.tags.label} name="tags" error={errors.tags} hint={F.tags.hint}>
              {input("tags", { placeholder: "manual, test" })}
            </Field>
            <Field label={F.maxAttempts.label} name="maxAttempts" error={errors.maxAttempts} hint={F.maxAttempts.hint}>
              {input("maxAttempts", { inputMode: "numeric", placeholder: String(LIMITS.defaultMaxAttempts) })}
            </Field>
          </div>
          {errors.form ? <p className="mt-3 text-sm text-red-800">{errors.form}</p> : null}
          <div className="mt-4 flex items-center gap-3">
            <button type="submit" className={buttonClass} disabled={pending}>
              {pending ? "Enqueueing…" : "Enqueue"}
            </button>
            <span className="text-xs text-slate-600">
              Submit again with the same values to see{" "}
              {mode === "debounce" ? "a replacement" : mode === "throttle" ? "a coalesce" : "a replay"}.
            </span>
          </div>
        </Card>
      </form>
      <div className="lg:col-span-2">
        <Result state={state} refusedInBrowser={tooLarge !== null} />
      </div>
    </div>
  );
}

/**
 * Whether a running worker takes `type` jobs from `queue` (from the workers' check-ins, polled like
 * the Workers page): then a test job runs at once, and cannot be purged or its key freed first.
 * Polls while the operator types too (a sentence, not a table, changes); stops when paused by hand.
 */
function QueueWorkers({ initial, queue, type }: { initial: WorkersDto; queue: string; type: string }) {
  const { paused } = useRefreshPolicy();
  const url = liveUrl.workers();
  const { data } = useQuery<WorkersDto>({
    queryKey: [url],
    queryFn: () => getJson<WorkersDto>(url),
    initialData: initial,
    initialDataUpdatedAt: Date.now(),
    refetchInterval: paused ? false : LIVE_INTERVAL_MS,
  });
  const taking = workersTaking((data ?? initial).workers, queue, type);
  return (
    <div aria-live="polite" data-testid="queue-workers">
      <Notice tone={taking.length ? "warn" : "info"}>
        {queueWorkersNote(taking.length, queue, type)}{" "}
        <Link className={`${linkClass} underline`} href="/workers">
          Workers page
        </Link>
      </Notice>
    </div>
  );
}

/** What the outcome means and what to do, in an operator's words. */
function OutcomeExplanation({
  outcome,
  reason,
  heldMode,
}: {
  outcome: string;
  reason: string | null;
  heldMode?: string | null;
}) {
  const e = explainOutcome(outcome, reason, heldMode);
  return (
    <div className="space-y-1 text-sm text-slate-700" data-testid="outcome-explanation">
      {reason ? <p className="font-medium text-slate-900">Not replaced: {REASON_LABELS[reason] ?? reason}.</p> : null}
      <p>{e.meaning}</p>
      {e.action ? <p>What to do: {e.action}</p> : null}
    </div>
  );
}

/** `refusedInBrowser`: the last submit never left the browser; the earlier result must not stand beside it. */
function Result({ state: submitted, refusedInBrowser }: { state: EnqueueFormState; refusedInBrowser: boolean }) {
  const state: EnqueueFormState = refusedInBrowser
    ? {
        status: "error",
        message: "Not sent: the payload is too large (see the Payload field). Nothing was enqueued by this submit.",
        fieldErrors: {},
      }
    : submitted;
  return (
    <section
      aria-labelledby="result-title"
      aria-live="polite"
      className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm"
    >
      <h2 id="result-title" className="mb-3 text-base font-semibold text-slate-900">
        Result
      </h2>
      {state.status === "idle" ? <p className="text-sm text-slate-600">Nothing submitted yet.</p> : null}
      {state.status === "error" ? (
        <Notice tone="error" role="alert">
          {state.message}
        </Notice>
      ) : null}
      {state.status === "done" ? (
        <div className="space-y-3" data-testid="enqueue-result">
          <p className="text-sm">
            Outcome: <Badge tone={state.outcome === "non_replaceable" ? "conflict" : undefined}>{state.outcome}</Badge>
            {state.reason ? (
              <>
                {" "}
                <Badge tone="conflict">{state.reason}</Badge>
              </>
            ) : null}{" "}
          </p>
          <OutcomeExplanation outcome={state.outcome} reason={state.reason} heldMode={state.heldMode} />
          <DefinitionList
            items={[
              [
                "Job id",
                <Link key="j" className={`${linkClass} font-mono text-xs`} href={`/jobs/${state.jobId}`}>
                  {state.jobId}
                </Link>,
              ],
              ...(state.keyed
                ? ([
                    state.heldMode
                      ? ["Mode", `${state.heldMode} (the key's; this request asked for ${state.mode ?? "idempotency"})`]
                      : ["Mode", state.mode ?? "idempotency"],
                    ["Scope", <Mono key="s">{state.keyed.scope}</Mono>],
                    ["Key preview", <Mono key="p">{state.keyed.keyPreview}</Mono>],
                    ["Key digest", <DigestLink key="d" digest={state.keyed.keyDigest} />],
                  ] as [string, React.ReactNode][])
                : []),
              ["Submission", `#${state.seq}`],
            ]}
          />
        </div>
      ) : null}
      {state.status === "conflict" ? (
        <div className="space-y-3" data-testid="enqueue-conflict">
          <p className="text-sm">
            Outcome: <Badge>conflict</Badge>{" "}
            <span className="text-slate-700">
              this key is bound to a job with a different request. Nothing was written.
            </span>
          </p>
          <DefinitionList
            items={[
              [
                "Conflicting fields",
                <ul key="f" className="flex flex-wrap gap-1" aria-label="Conflicting fields">
                  {state.conflict.conflictingFields.map((f) => (
                    <li key={f}>
                      <Badge tone="conflict">{f}</Badge>
                    </li>
                  ))}
                </ul>,
              ],
              ["Payload paths", state.conflict.payloadPaths?.length ? state.conflict.payloadPaths.join(", ") : "—"],
              [
                "Existing job",
                <Link
                  key="j"
                  className={`${linkClass} font-mono text-xs`}
                  href={`/jobs/${state.conflict.existingJobId}`}
                >
                  {state.conflict.existingJobId}
                </Link>,
              ],
              ["Scope", <Mono key="s">{state.conflict.scope}</Mono>],
              ["Key preview", <Mono key="p">{state.conflict.keyPreview}</Mono>],
              ["Key digest", <DigestLink key="d" digest={state.conflict.keyDigest} />],
              ["Stored request", <Mono key="sr">{state.conflict.storedRequestDigest.slice(0, 16)}…</Mono>],
              ["This request", <Mono key="rr">{state.conflict.rejectedRequestDigest.slice(0, 16)}…</Mono>],
              ["Submission", `#${state.seq}`],
            ]}
          />
        </div>
      ) : null}
    </section>
  );
}
