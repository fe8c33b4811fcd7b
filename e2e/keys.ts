/**
 * The raw idempotency keys the e2e flows use. They are derived from the run id so that the
 * no-raw-keys scan (a separate project) knows exactly what to look for, and are long enough that
 * their bounded preview (at most 8 leading characters) can never contain them.
 */
const run = process.env.E2E_RUN_ID ?? "local";

export const KEYS = {
  order: `order-form-${run}-7f3a9c1e-submit`,
  purgeSeed: `seeded-for-readonly-${run}-b81d`,
  debounce: `search-index-${run}-doc-4417-edit`,
  throttle: `order-shipped-${run}-ORD-5120-notice`,
  heldByIdempotency: `held-by-idempotency-${run}-c0ffee`,
} as const;

export const ALL_KEYS: string[] = Object.values(KEYS);
export const SCOPE = `e2e-orders-${run}`;
export const PASSWORD = process.env.E2E_PASSWORD ?? "e2e-password";
