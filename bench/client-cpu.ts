/**
 * Client CPU per request: what `lib/enqueue` spends in the Node.js process before a request reaches
 * the driver (validation with zod, payload serialisation and limits, key hashing, fingerprint
 * digests), in µs per request, for the bench's keyed accept request and for a keyless one.
 *
 *   npx tsx bench/client-cpu.ts [--calls=20000] [--reps=5]
 *
 * `npm run bench` prints the same measurement (fewer calls) under its tables. No database: the key
 * ring is loaded with a random secret. Each variant runs `calls` requests, `reps` times after a
 * warm-up; the minimum per variant is reported (the least disturbed by other work on the machine).
 * Keys differ per call, as in the bench, so the HMAC is never cached.
 */
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { normalizeRequest } from "../lib/enqueue/enqueue-input";
import { KeyRing } from "../lib/enqueue/keys";
import { payloadFor } from "./contenders";

export interface ClientCpu {
  /** µs per keyed request (the bench's accept request). */
  keyedUs: number;
  /** µs per keyless request with the same payload. */
  keylessUs: number;
}

export async function measureClientCpu(calls = 20_000, reps = 5): Promise<ClientCpu> {
  const keys = new KeyRing(randomBytes(32));
  await keys.load(async () => ({ key_secret: null, legacy_ms: 0 }));
  const config = { maxPayloadBytes: 1024 * 1024, source: null, keys };
  const variants: Record<keyof ClientCpu, (i: number) => unknown> = {
    keyedUs: (i) =>
      normalizeRequest(
        "invoice.capture",
        payloadFor(String(i)),
        { queue: "billing", idempotency: { key: `accept-${i}`, scope: "invoice-capture" } },
        config,
      ),
    keylessUs: (i) => normalizeRequest("invoice.capture", payloadFor(String(i)), { queue: "billing" }, config),
  };
  const best: ClientCpu = { keyedUs: Number.POSITIVE_INFINITY, keylessUs: Number.POSITIVE_INFINITY };
  for (let rep = 0; rep <= reps; rep++) {
    for (const [label, fn] of Object.entries(variants) as [keyof ClientCpu, (i: number) => unknown][]) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) fn(rep * calls + i);
      const us = Number(process.hrtime.bigint() - t0) / 1000 / calls;
      if (rep > 0) best[label] = Math.min(best[label], us);
    }
  }
  return best;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const arg = (name: string, d: number) => {
    const m = process.argv.find((a) => a.startsWith(`--${name}=`));
    return m ? Number(m.split("=")[1]) : d;
  };
  const r = await measureClientCpu(arg("calls", 20_000), arg("reps", 5));
  process.stdout.write(`keyed (bench accept request)     ${r.keyedUs.toFixed(1).padStart(6)} µs per request\n`);
  process.stdout.write(`keyless                          ${r.keylessUs.toFixed(1).padStart(6)} µs per request\n`);
}
