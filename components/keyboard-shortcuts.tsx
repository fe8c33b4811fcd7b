"use client";
import { useEffect } from "react";

function typingIn(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (el as HTMLElement).isContentEditable;
}

/** The first link of each row of the page's main tables: what j / k step through. */
function rowLinks(): HTMLAnchorElement[] {
  return Array.from(document.querySelectorAll<HTMLAnchorElement>("main table tbody tr td a[href]")).filter(
    (a, i, all) => all.findIndex((b) => b.closest("tr") === a.closest("tr")) === i,
  );
}

/**
 * Keyboard habits of the other queue consoles: `/` focuses the page's search or first filter,
 * `j` / `k` move down / up the rows of a table (focusing the row's first link), Enter opens it (the
 * browser's own behaviour on a focused link). Ignored while typing or with a dialog open.
 */
export function KeyboardShortcuts() {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      if (typingIn(document.activeElement) || document.querySelector("dialog[open]")) return;
      if (e.key === "/") {
        const target = document.querySelector<HTMLInputElement>(
          "main input[data-search], main form input:not([type=hidden]):not([type=checkbox])",
        );
        if (target) {
          e.preventDefault();
          target.focus();
          target.select();
        }
        return;
      }
      if (e.key !== "j" && e.key !== "k") return;
      const links = rowLinks();
      if (links.length === 0) return;
      e.preventDefault();
      const current = links.findIndex((a) => a.closest("tr")?.contains(document.activeElement));
      const next = current === -1 ? (e.key === "j" ? 0 : links.length - 1) : current + (e.key === "j" ? 1 : -1);
      const link = links[Math.max(0, Math.min(links.length - 1, next))];
      link?.focus();
      link?.closest("tr")?.scrollIntoView({ block: "nearest" });
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  return null;
}
