/** Typed results of the console's server actions, rendered by `useActionState`. Never carries a raw key. */
import type { IdempotencyConflictDetails } from "@workhorse/core/client";
import type { BindingDto, JobStateName, KeyEverywhere } from "./types";

export type FieldErrors = Partial<Record<string, string>>;

export type FormError = { status: "error"; message: string; fieldErrors: FieldErrors };
type Idle = { status: "idle" };

/** A conflict as the enqueue form shows it: the core's conflict details (never a value), with the message. */
type ConflictView = Omit<IdempotencyConflictDetails, "ordinal" | "payloadPaths" | "payloadPathsTruncated"> & {
  message: string;
  payloadPaths: string[] | null;
};

export type EnqueueFormState =
  | Idle
  | FormError
  | {
      status: "done";
      outcome: string;
      /** For `non_replaceable` only: why the debounce request could not replace the job. */
      reason: string | null;
      /** The mode this request asked for (null without a key). */
      mode: "idempotency" | "debounce" | "throttle" | null;
      /**
       * The mode the key is held in when it is not the one asked (`non_replaceable` with
       * `incompatible_key_mode`: a debounce request on a key an idempotency or throttle job holds), else null.
       */
      heldMode: "idempotency" | "debounce" | "throttle" | null;
      jobId: string;
      keyed: { scope: string; keyPreview: string; keyDigest: string; keyLength: number } | null;
      /** Increases on every submission, so the panel visibly updates on a repeat. */
      seq: number;
    }
  | { status: "conflict"; conflict: ConflictView; seq: number };

interface JobSummary {
  id: string;
  state: JobStateName;
  queue: string;
  type: string;
  createdAt: string;
  purgedAt: string | null;
}

export type KeyHistory =
  | { kind: "released"; jobId: string; purgedAt: string | null }
  | { kind: "expired_cleaned"; jobId: string; expiredAt: string | null }
  | { kind: "never_seen" }
  | { kind: "unknown" };

export type FindKeyState =
  | Idle
  | FormError
  | {
      status: "found";
      scope: string;
      binding: BindingDto;
      job: JobSummary | null;
      now: string;
      whitespace: KeyWhitespace | null;
      /** With several databases configured: the key in each of them. */
      everywhere?: KeyEverywhere;
    }
  | {
      status: "none";
      scope: string;
      keyDigest: string;
      keyLength: number;
      history: KeyHistory;
      whitespace: KeyWhitespace | null;
      elsewhere: KeyElsewhere | null;
      /** With several databases configured: the key in each of them. */
      everywhere?: KeyEverywhere;
    };

/** Whitespace around the key as typed (keys are compared exactly, so it is part of the key). */
export interface KeyWhitespace {
  leading: number;
  trailing: number;
}

/**
 * Where else the key has a binding, when none is in the scope asked: the key as typed in the other
 * known scopes, or (`trimmed`) the key without its surrounding whitespace in every known scope.
 */
export interface KeyElsewhere {
  trimmed: boolean;
  matches: { scope: string; jobId: string; expired: boolean }[];
  scopesSearched: number;
  /** False when there were more scopes than one lookup probes. */
  searchedAll: boolean;
}

export type PurgeState =
  | Idle
  | FormError
  | { status: "refused"; message: string }
  | { status: "done"; purged: number; releasedBindings: number; target: string };

export type MaintenanceState =
  | Idle
  | FormError
  | {
      status: "done";
      expiredBindingsDeleted: number;
      observationsDeleted: number;
      expiredLeasesReaped: number;
      at: string;
    };

/** A failed sign-in gives back the name typed (never the password). */
export type SignInState = Idle | (FormError & { actor?: string });

/**
 * Result of an operator action on jobs or a queue (cancel, run now, redrive, pause, resume).
 * `summary` says how many changed and why the rest did not, in words; `counts` the same as numbers.
 */
export type OperatorActionState =
  | Idle
  | FormError
  | { status: "refused"; message: string }
  | { status: "done"; summary: string; counts: Record<string, number>; seq: number };

/** One source job of a redrive (dry run or real). */
interface RedriveResultView {
  sourceJobId: string;
  status: "redriven" | "replayed" | "already_redriven" | "eligible" | "not_found" | "not_failed";
  jobId: string | null;
}

/** A redrive form: after a dry run (`dryRun: true`) the same request id confirms it. */
export type RedriveState =
  | Idle
  | FormError
  | { status: "refused"; message: string }
  | {
      status: "done";
      dryRun: boolean;
      summary: string;
      counts: Record<string, number>;
      results: RedriveResultView[];
      seq: number;
    };
