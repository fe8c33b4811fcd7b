/**
 * Failed sign-in limiter, in memory (one console process), over a sliding `windowMs`:
 *
 * - per client address (the socket's, or the trusted proxy's report; see request-info.ts): after
 *   `perAddress` failures that address is refused, before its password is even checked, until the
 *   oldest failure leaves the window. An attacker slows down only themselves.
 * - per name typed in the form, and overall: after `perName` / `global` failures, sign-ins are
 *   slowed by `slowdownMs`, never refused, so a correct password from another address always works.
 */
interface LimiterOptions {
  perAddress: number;
  perName: number;
  global: number;
  windowMs: number;
  slowdownMs: number;
}

interface SignInVerdict {
  /** > 0: refuse this address for this many milliseconds (without checking the password). */
  refuseMs: number;
  /** > 0: check the password, but only after waiting this long. */
  delayMs: number;
}

export class FailureLimiter {
  private byAddress = new Map<string, number[]>();
  private byName = new Map<string, number[]>();
  private all: number[] = [];

  constructor(
    private readonly opts: LimiterOptions = {
      perAddress: 5,
      perName: 10,
      global: 50,
      windowMs: 5 * 60_000,
      slowdownMs: 1_000,
    },
  ) {}

  private prune(list: number[], now: number): number[] {
    const since = now - this.opts.windowMs;
    let i = 0;
    while (i < list.length && (list[i] as number) <= since) i++;
    return i === 0 ? list : list.slice(i);
  }

  private recent(map: Map<string, number[]>, key: string, now: number): number[] {
    const list = this.prune(map.get(key) ?? [], now);
    if (list.length === 0) map.delete(key);
    else map.set(key, list);
    return list;
  }

  check(address: string, name: string, now = Date.now()): SignInVerdict {
    this.all = this.prune(this.all, now);
    const mine = this.recent(this.byAddress, address, now);
    const named = this.recent(this.byName, name.toLowerCase(), now);
    const { perAddress, perName, global, windowMs, slowdownMs } = this.opts;
    const refuseMs =
      mine.length >= perAddress ? Math.max(1, (mine[mine.length - perAddress] as number) + windowMs - now) : 0;
    const delayMs = named.length >= perName || this.all.length >= global ? slowdownMs : 0;
    return { refuseMs, delayMs };
  }

  fail(address: string, name: string, now = Date.now()): void {
    this.all.push(now);
    for (const [map, key] of [
      [this.byAddress, address],
      [this.byName, name.toLowerCase()],
    ] as const) {
      const list = map.get(key) ?? [];
      list.push(now);
      map.set(key, list);
    }
  }

  /** A correct password clears that address's failures. */
  succeed(address: string): void {
    this.byAddress.delete(address);
  }
}

/**
 * Requests per key (a console session) over a sliding `windowMs`, in memory (one console process):
 * the first `perKey` in any window are allowed, the next are refused until the oldest leaves it.
 * For reads that cost the database something on every call (find by key digest).
 */
export class RequestLimiter {
  private byKey = new Map<string, number[]>();

  constructor(private readonly opts: { perKey: number; windowMs: number }) {}

  /** Counts one request by `key` at `now`: 0 when allowed, else milliseconds until one would be. */
  take(key: string, now = Date.now()): number {
    const since = now - this.opts.windowMs;
    if (this.byKey.size > 10_000) {
      for (const [k, list] of this.byKey) if ((list[list.length - 1] as number) <= since) this.byKey.delete(k);
    }
    const list = (this.byKey.get(key) ?? []).filter((at) => at > since);
    if (list.length >= this.opts.perKey) {
      this.byKey.set(key, list);
      return Math.max(1, (list[list.length - this.opts.perKey] as number) + this.opts.windowMs - now);
    }
    list.push(now);
    this.byKey.set(key, list);
    return 0;
  }
}

const g = globalThis as { __workhorseSignInLimiter?: FailureLimiter; __workhorseDigestLimiter?: RequestLimiter };
export const signInLimiter: FailureLimiter = g.__workhorseSignInLimiter ?? new FailureLimiter();
g.__workhorseSignInLimiter = signInLimiter;

/** Find-by-digest lookups one console session may make in a minute. */
export const DIGEST_LOOKUPS_PER_MINUTE = 30;
export const digestLookupLimiter: RequestLimiter =
  g.__workhorseDigestLimiter ?? new RequestLimiter({ perKey: DIGEST_LOOKUPS_PER_MINUTE, windowMs: 60_000 });
g.__workhorseDigestLimiter = digestLookupLimiter;
