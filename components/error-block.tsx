/** Stack traces found in a value (an error summary, its causes, or an event's `error`), outermost first. */
function stacksOf(value: unknown, path = ""): { path: string; stack: string }[] {
  if (!value || typeof value !== "object") return [];
  const out: { path: string; stack: string }[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === "stack" && typeof v === "string") out.push({ path: path || "error", stack: v });
    else if (v && typeof v === "object") out.push(...stacksOf(v, path ? `${path}.${k}` : k));
  }
  return out;
}

/** The value without its `stack` strings (shown apart, with their line breaks). */
function withoutStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutStacks);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([k, v]) => !(k === "stack" && typeof v === "string"))
      .map(([k, v]) => [k, withoutStacks(v)]),
  );
}

/**
 * JSON as text, except stack traces: JSON would show a stack as one string with literal `\n`, so
 * each stack is shown below it as text with its real line breaks.
 */
export function JsonWithStacks({ value, className }: { value: unknown; className: string }) {
  const stacks = stacksOf(value);
  return (
    <>
      <pre className={className}>{JSON.stringify(stacks.length ? withoutStacks(value) : value, null, 2)}</pre>
      {stacks.map((s) => (
        <details key={s.path} className="mt-2 text-xs" open={stacks.length === 1}>
          <summary className="cursor-pointer text-slate-700">
            Stack trace{s.path === "error" ? "" : ` (${s.path})`}
          </summary>
          <pre className={className} data-testid="stack-trace">
            {s.stack}
          </pre>
        </details>
      ))}
    </>
  );
}
