"use client";
import { useState } from "react";

/**
 * Keeps a newest-first live table still while the operator reads it: rows already shown stay (with
 * their latest data), rows that arrived since are only counted, and `showNew()` takes them in. The
 * "N new, show" pattern of the other queue consoles.
 */
export function useNewRows<T>(rows: T[], idOf: (r: T) => string) {
  const [shownIds, setShownIds] = useState<Set<string>>(() => new Set(rows.map(idOf)));
  const [lastShown, setLastShown] = useState<Map<string, T>>(() => new Map(rows.map((r) => [idOf(r), r])));
  const latest = new Map(rows.map((r) => [idOf(r), r]));
  const fresh = rows.filter((r) => !shownIds.has(idOf(r)));
  const visible = [...lastShown.keys()].map((id) => latest.get(id) ?? (lastShown.get(id) as T));
  return {
    rows: visible,
    newCount: fresh.length,
    showNew() {
      setShownIds(new Set(rows.map(idOf)));
      setLastShown(new Map(rows.map((r) => [idOf(r), r])));
    },
  };
}

export function NewRowsBar({ count, onShow }: { count: number; onShow: () => void }) {
  if (count === 0) return null;
  return (
    <div className="mb-2 flex justify-center">
      <button
        type="button"
        onClick={onShow}
        className="rounded-full border border-blue-700 bg-blue-50 px-3 py-1 text-sm font-medium text-blue-900 hover:bg-blue-100"
      >
        {count} new, show
      </button>
    </div>
  );
}
