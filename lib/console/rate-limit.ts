/**
 * Failed sign-in limiter, in memory (one console process): at most `perClient` failures per client
 * and `global` failures overall in a sliding `windowMs`. A locked client is refused before the
 * password is even checked, so guessing costs the attacker the whole window.
 */
export class FailureLimiter {
  private byClient = new Map<string, number[]>();
  private all: number[] = [];

  constructor(
    private readonly opts: { perClient: number; global: number; windowMs: number } = {
      perClient: 5,
      global: 50,
      windowMs: 5 * 60_000,
    },
  ) {}

  private prune(list: number[], now: number): number[] {
    const since = now - this.opts.windowMs;
    let i = 0;
    while (i < list.length && (list[i] as number) <= since) i++;
    return i === 0 ? list : list.slice(i);
  }

  /** Milliseconds until this client may try again; 0 when allowed now. */
  retryAfterMs(client: string, now = Date.now()): number {
    this.all = this.prune(this.all, now);
    const mine = this.prune(this.byClient.get(client) ?? [], now);
    if (mine.length === 0) this.byClient.delete(client);
    else this.byClient.set(client, mine);
    const wait = (list: number[], limit: number) =>
      list.length >= limit ? (list[list.length - limit] as number) + this.opts.windowMs - now : 0;
    return Math.max(0, wait(mine, this.opts.perClient), wait(this.all, this.opts.global));
  }

  fail(client: string, now = Date.now()): void {
    this.all.push(now);
    const mine = this.byClient.get(client) ?? [];
    mine.push(now);
    this.byClient.set(client, mine);
  }

  succeed(client: string): void {
    this.byClient.delete(client);
  }
}

const g = globalThis as { __workhorseSignInLimiter?: FailureLimiter };
export const signInLimiter: FailureLimiter = g.__workhorseSignInLimiter ?? new FailureLimiter();
g.__workhorseSignInLimiter = signInLimiter;
