/**
 * What each enqueue outcome and non-replaceable reason means, in an operator's words, and what to
 * do about it. Shared by the enqueue form's result and the conflicts & replays page (client-safe).
 * The rules are in docs/decisions.md, "Debounce and throttle".
 */

interface Explanation {
  /** One sentence: what happened. */
  meaning: string;
  /** What to do next, when anything. */
  action: string | null;
}

const OUTCOMES: Record<string, Explanation> = {
  accepted: { meaning: "A new job was created and now holds the key.", action: null },
  replayed: {
    meaning: "The key already holds this same request: the existing job was returned and nothing was written.",
    action: null,
  },
  replaced: {
    meaning:
      "A debounce repeat: the pending job was rewritten in place with this request (same job id); its run time moved unless the schedule is preserve.",
    action: null,
  },
  coalesced: {
    meaning:
      "A throttle repeat inside the window: answered with the window's job, whatever its state; nothing was written.",
    action: "A new job can be created once the window closes.",
  },
  conflict: {
    meaning: "The key is held by a job with a different request (or another mode); the request was refused.",
    action: "Use a new key for different work, or wait until the key expires.",
  },
};

const REASONS: Record<string, Explanation> = {
  incompatible_key_mode: {
    meaning:
      "The key is held by an idempotency or throttle request, so a debounce request cannot change its job. Nothing was written.",
    action: "Use a key of its own for debounced work, or wait until the current binding expires.",
  },
  not_pending: {
    meaning:
      "The debounce window is still open, but its job is running, has run before, or has ended, so it can no longer be changed. Nothing was written.",
    action:
      "If this change must still be processed, wait for the window to close: the next request then creates a new job.",
  },
  window_elapsed_pending: {
    meaning:
      "The debounce window is over and its job is due but has not started yet. Replacing it now could let it run twice, and a second job would repeat the work, so nothing was written; the job runs with the last accepted version.",
    action:
      "Usually nothing: the job will run shortly. If it stays waiting, check that a worker serves its queue and the queue is not paused; once it has started, the next request creates a new job.",
  },
};

/**
 * The explanation for an outcome (with its reason, for non_replaceable). `heldMode`: the mode that
 * holds the key, when the caller knows it (the enqueue form looks it up; the observation log keeps
 * none), so an `incompatible_key_mode` refusal names it.
 */
export function explainOutcome(outcome: string, reason?: string | null, heldMode?: string | null): Explanation {
  if (outcome === "non_replaceable") {
    if (reason === "incompatible_key_mode" && (heldMode === "idempotency" || heldMode === "throttle")) {
      return {
        action: REASONS.incompatible_key_mode?.action ?? null,
        meaning: `The key is held by ${heldMode === "idempotency" ? "an idempotency" : "a throttle"} request, so a debounce request cannot change its job. Nothing was written.`,
      };
    }
    return (
      REASONS[reason ?? ""] ?? {
        meaning: "The debounce request could not replace the job. Nothing was written.",
        action: null,
      }
    );
  }
  return OUTCOMES[outcome] ?? { meaning: outcome, action: null };
}

export type KeyModeName = "idempotency" | "debounce" | "throttle";

/** The key field's label per mode: the form shows it, and field errors use the same words. */
export const KEY_LABELS: Record<KeyModeName, string> = {
  idempotency: "Idempotency key",
  debounce: "Debounce key",
  throttle: "Throttle key",
};

/** The short operator label of a non-replaceable reason. */
export const REASON_LABELS: Record<string, string> = {
  incompatible_key_mode: "key held in another mode",
  not_pending: "job no longer pending",
  window_elapsed_pending: "window over, job not started yet",
};
