/** Timing primitives: run N calls over C concurrent callers, keep every latency. */

export interface Sample {
  /** Latency of each call, in milliseconds. */
  latencies: number[];
  /** Wall-clock time of the whole segment, in milliseconds. */
  wallMs: number;
  /** Calls made (each may stand for many jobs: see `unitsPerCall`). */
  calls: number;
}

/**
 * Runs `calls` invocations of `op(i)` (i = 0..calls-1) with `concurrency` callers pulling the next
 * index, and returns every latency plus the segment's wall time. An op that throws aborts the segment.
 */
export async function runSegment(
  op: (i: number) => Promise<unknown>,
  calls: number,
  concurrency: number,
): Promise<Sample> {
  const latencies = new Array<number>(calls);
  let next = 0;
  const started = performance.now();
  const caller = async () => {
    for (;;) {
      const i = next++;
      if (i >= calls) return;
      const t0 = performance.now();
      await op(i);
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, caller));
  return { latencies, wallMs: performance.now() - started, calls };
}

/** Runs `op` with `concurrency` callers until `stop()` returns true; latencies in ms. */
export async function runUntil(
  op: (i: number) => Promise<unknown>,
  concurrency: number,
  stop: () => boolean,
): Promise<Sample> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const caller = async () => {
    while (!stop()) {
      const i = next++;
      const t0 = performance.now();
      await op(i);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  return { latencies, wallMs: performance.now() - started, calls: latencies.length };
}

export interface Summary {
  calls: number;
  /** Calls per second over the summed wall time of all segments. */
  callsPerSec: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function summarize(samples: readonly Sample[]): Summary {
  const all: number[] = [];
  let wall = 0;
  let calls = 0;
  for (const s of samples) {
    for (const l of s.latencies) all.push(l);
    wall += s.wallMs;
    calls += s.calls;
  }
  all.sort((a, b) => a - b);
  return {
    calls,
    callsPerSec: wall > 0 ? (calls * 1000) / wall : 0,
    p50: percentile(all, 50),
    p95: percentile(all, 95),
    p99: percentile(all, 99),
    max: all.length ? (all[all.length - 1] as number) : Number.NaN,
  };
}

/** A small deterministic PRNG (mulberry32), so round orders and picks repeat run to run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
