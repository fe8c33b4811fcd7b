"use client";
import { createContext, type ReactNode, useContext, useEffect, useState } from "react";
import type { OperatorActionState, RedriveState } from "@/lib/console/wire/action-state";
import type { CappedCount, JobFilterParams } from "@/lib/console/wire/types";
import { ActionDialogs } from "./action-dialog";
import { secondaryButtonClass } from "./ui";

interface Selection {
  selected: ReadonlySet<string>;
  all: boolean;
  toggle: (id: string) => void;
  /** The jobs table reports the ids it shows, for "select this page". */
  setVisible: (ids: string[]) => void;
}

/** The jobs list's selection, for the checkbox column of the jobs table. Null when bulk actions are off. */
export const JobsSelection = createContext<Selection | null>(null);

export function useJobsSelection(): Selection | null {
  return useContext(JobsSelection);
}

/** Reports the ids a table shows to the selection (no-op without one). */
export function useVisibleJobs(ids: string[]) {
  const sel = useContext(JobsSelection);
  const key = ids.join(",");
  // biome-ignore lint/correctness/useExhaustiveDependencies: the joined key stands for the ids
  useEffect(() => {
    sel?.setVisible(key ? key.split(",") : []);
  }, [key]);
}

type Act<S> = (prev: S, data: FormData) => Promise<S>;

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/**
 * Bulk actions on the jobs list: select rows (or this page), or every job matching the current
 * filter ("all N"), then cancel, run now, redrive or purge them. Each dialog states the count before the
 * operator confirms; results say how many changed and why the rest did not.
 */
export function JobsBulk(props: {
  filter: JobFilterParams;
  /** Counts the jobs matching `filter` (up to the cap) when the operator asks for "all matching". */
  countMatching: (filter: JobFilterParams) => Promise<CappedCount | { error: string }>;
  cap: number;
  cancel: Act<OperatorActionState>;
  runNow: Act<OperatorActionState>;
  redrive: Act<RedriveState>;
  purge: Act<OperatorActionState>;
  children: ReactNode;
}) {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [all, setAll] = useState(false);
  const [visible, setVisible] = useState<string[]>([]);
  const [matching, setMatching] = useState<CappedCount>({ value: 0, capped: false });
  const [counting, setCounting] = useState(false);
  const [countError, setCountError] = useState<string | null>(null);
  const selectAll = async () => {
    setCounting(true);
    setCountError(null);
    try {
      const r = await props.countMatching(props.filter);
      if ("error" in r) setCountError(r.error);
      else {
        setMatching(r);
        setAll(r.value > 0);
        if (r.value === 0) setCountError("No jobs match this filter.");
      }
    } finally {
      setCounting(false);
    }
  };
  const toggle = (id: string) => {
    setAll(false);
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  };
  const n = all ? matching.value : selected.size;
  const target = all
    ? matching.capped
      ? `the newest ${plural(props.cap, "job")} of the more than ${props.cap.toLocaleString("en-US")} matching this filter`
      : `all ${plural(matching.value, "job")} matching this filter`
    : plural(selected.size, "selected job");
  const hidden: Record<string, string> = all
    ? {
        all: "1",
        ...Object.fromEntries(Object.entries(props.filter).filter((e): e is [string, string] => !!e[1])),
      }
    : { jobIds: [...selected].join(",") };
  const dialogKey = all ? "all" : [...selected].join(",");
  return (
    <JobsSelection.Provider value={{ selected, all, toggle, setVisible }}>
      <section
        aria-label="Bulk actions"
        className="mb-3 flex flex-wrap items-start gap-2 rounded-lg border border-slate-200 bg-white p-3"
      >
        <p className="py-1.5 text-sm text-slate-800" aria-live="polite">
          {all
            ? `All ${plural(matching.value, "job")}${matching.capped ? "+" : ""} matching this filter selected`
            : `${selected.size} selected`}
        </p>
        {visible.length > 0 && !all ? (
          <button
            type="button"
            className={secondaryButtonClass}
            onClick={() => setSelected((s) => new Set([...s, ...visible]))}
          >
            Select this page ({visible.length})
          </button>
        ) : null}
        {!all ? (
          <button type="button" className={secondaryButtonClass} onClick={selectAll} disabled={counting}>
            {counting ? "Counting…" : "Select all jobs matching this filter"}
          </button>
        ) : null}
        {countError ? (
          <p className="py-1.5 text-sm text-red-800" role="alert">
            {countError}
          </p>
        ) : null}
        {n > 0 ? (
          <button
            type="button"
            className={secondaryButtonClass}
            onClick={() => {
              setAll(false);
              setSelected(new Set());
            }}
          >
            Clear selection
          </button>
        ) : null}
        <ActionDialogs
          hidden={hidden}
          disabled={n === 0}
          dialogs={[
            {
              id: `c-${dialogKey}`,
              action: props.cancel,
              label: "Cancel…",
              title: `Cancel ${plural(n, "job")}?`,
              statement: `This applies to ${target}. Scheduled and ready jobs become canceled now; active ones are stopped by their workers at the next heartbeat; finished jobs are left alone and counted.`,
              confirmLabel: `Cancel ${plural(n, "job")}`,
              danger: true,
            },
            {
              id: `r-${dialogKey}`,
              action: props.runNow,
              label: "Run now…",
              title: `Run ${plural(n, "job")} now?`,
              statement: `This applies to ${target}. Scheduled jobs become ready now; other states are left alone and counted.`,
              confirmLabel: `Run ${plural(n, "job")} now`,
            },
            {
              id: `d-${dialogKey}`,
              action: props.redrive,
              label: "Redrive…",
              title: `Redrive ${plural(n, "job")}?`,
              statement: `This applies to ${target}. Failed jobs get a new ready job with their definition, linked to them; other states are left alone. Run the dry run first: it says exactly what would be redriven.`,
            },
            {
              id: `p-${dialogKey}`,
              action: props.purge,
              label: "Purge…",
              title: `Purge ${plural(n, "job")}?`,
              statement: `This applies to ${target}. Ready and scheduled jobs become tombstones (state purged) and release their idempotency keys; other states are left alone and counted. This cannot be undone.`,
              confirmLabel: `Purge ${plural(n, "job")}`,
              danger: true,
            },
          ]}
        />
      </section>
      {props.children}
    </JobsSelection.Provider>
  );
}
