/** A timer for background work in the core and the worker: it never keeps the process alive. */

/** At most one pending call of `run` at a time, on a timer that does not keep the process alive. */
export class OneShotTimer {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly run: () => void) {}

  get pending(): boolean {
    return this.timer !== null;
  }

  /** Calls `run` in `ms` (replacing a pending call). */
  start(ms: number): void {
    this.cancel();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, ms);
    this.timer.unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
