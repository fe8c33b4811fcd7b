"use client";
/** A small line under a live table: when it last refreshed, or why the refresh failed. */
export function LiveStatus({ error, updatedAt }: { error: Error | null; updatedAt: number }) {
  if (error) {
    return (
      <p role="alert" className="mt-2 text-sm text-red-800">
        Could not refresh: {error.message}. Showing the last data we had.
      </p>
    );
  }
  return (
    <p className="mt-2 text-xs text-slate-600" suppressHydrationWarning>
      Updated {new Date(updatedAt).toISOString().slice(11, 19)} UTC
    </p>
  );
}
