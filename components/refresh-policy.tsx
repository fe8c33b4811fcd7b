"use client";
/**
 * The one refresh policy for every live table: poll every `intervalMs`, but not while the user is
 * typing in or choosing from a form control, or has text selected (a table changing under a
 * selection loses it), and not when paused by hand.
 */
import { createContext, type ReactNode, useContext, useEffect, useState } from "react";

export const LIVE_INTERVAL_MS = 5_000;

interface Policy {
  intervalMs: number | false;
  paused: boolean;
  reason: "typing" | "selecting" | "paused" | null;
  setPaused(p: boolean): void;
}

const Ctx = createContext<Policy>({ intervalMs: LIVE_INTERVAL_MS, paused: false, reason: null, setPaused: () => {} });

function isFormControl(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (el as HTMLElement).isContentEditable;
}

export function RefreshPolicyProvider({ children }: { children: ReactNode }) {
  const [paused, setPaused] = useState(false);
  const [typing, setTyping] = useState(false);
  const [selecting, setSelecting] = useState(false);

  useEffect(() => {
    const onFocus = () => setTyping(isFormControl(document.activeElement));
    const onSelection = () => {
      const sel = document.getSelection();
      setSelecting(!!sel && !sel.isCollapsed && sel.toString().trim().length > 0);
    };
    // After focus leaves a field, document.activeElement is settled only on the next task.
    const onBlur = () => setTimeout(onFocus, 0);
    document.addEventListener("focusin", onFocus);
    document.addEventListener("focusout", onBlur);
    document.addEventListener("selectionchange", onSelection);
    return () => {
      document.removeEventListener("focusin", onFocus);
      document.removeEventListener("focusout", onBlur);
      document.removeEventListener("selectionchange", onSelection);
    };
  }, []);

  const reason = paused ? "paused" : typing ? "typing" : selecting ? "selecting" : null;
  return (
    <Ctx.Provider value={{ intervalMs: reason ? false : LIVE_INTERVAL_MS, paused, reason, setPaused }}>
      {children}
    </Ctx.Provider>
  );
}

export function useRefreshPolicy(): Policy {
  return useContext(Ctx);
}

export function LiveIndicator() {
  const { reason, paused, setPaused } = useRefreshPolicy();
  const label =
    reason === "typing"
      ? "Paused while you type"
      : reason === "selecting"
        ? "Paused while text is selected"
        : reason === "paused"
          ? "Paused"
          : `Live: every ${LIVE_INTERVAL_MS / 1000}s`;
  return (
    <div className="flex items-center gap-2 text-xs text-chrome-muted">
      <span aria-hidden className={`inline-block h-2 w-2 rounded-full ${reason ? "bg-amber-400" : "bg-emerald-400"}`} />
      <span aria-live="polite">{label}</span>
      <button
        type="button"
        onClick={() => setPaused(!paused)}
        className="rounded border border-chrome-muted px-1.5 py-0.5 text-chrome-fg hover:bg-chrome-hover"
      >
        {paused ? "Resume" : "Pause"}
      </button>
    </div>
  );
}
