/**
 * Failed sign-in limiter, in memory (one console process), over a sliding `windowMs`:
 *
 * - per client address (the socket's, or the trusted proxy's report; see request-info.ts): after
 *   `perAddress` failures that address is refused, before its password is even checked, until the
 *   oldest failure leaves the window. An attacker slows down only themselves.
 * - per name typed in the form, and overall: after `perName` / `global` failures, sign-ins are
 *   slowed by `slowdownMs`, never refused, so a correct password from another address always works.
 */
export interface LimiterOptions {
  perAddress: number;
  perName: number;
  global: number;
  windowMs: number;
  slowdownMs: number;
}

export interface SignInVerdict {
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

const g = globalThis as { __workhorseSignInLimiter?: FailureLimiter };
export const signInLimiter: FailureLimiter = g.__workhorseSignInLimiter ?? new FailureLimiter();
g.__workhorseSignInLimiter = signInLimiter;
