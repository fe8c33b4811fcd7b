/**
 * One read per configured database, all at once, each bounded by its own deadline: a database that
 * fails gives `failed(err)`, one that has not answered in `timeoutMs` gives `slow()`, and neither holds
 * up the others. Results keep the configured order.
 */
export async function eachDatabase<D, T>(
  databases: readonly D[],
  timeoutMs: number,
  read: (d: D) => Promise<T>,
  outcomes: { failed: (d: D, err: unknown) => T; slow: (d: D) => T },
): Promise<{ value: T; ms: number }[]> {
  return Promise.all(
    databases.map(async (d) => {
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<T>((resolve) => {
        timer = setTimeout(() => resolve(outcomes.slow(d)), timeoutMs);
      });
      const work = (async () => read(d))().catch((err: unknown) => outcomes.failed(d, err));
      try {
        const value = await Promise.race([work, slow]);
        return { value, ms: Math.round(performance.now() - started) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/** An error's message for an operator (never a stack). */
export function errorText(err: unknown): string {
  return err instanceof Error && err.message ? err.message : String(err);
}
