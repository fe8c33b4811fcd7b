/**
 * Client CPU per request: what `lib/enqueue` spends in the Node.js process before a request reaches
 * the driver (validation with zod, payload serialisation and limits, key hashing, fingerprint
 * digests), in µs per request, for the bench's keyed accept request and for a keyless one.
 *
 *   npx tsx bench/client-cpu.ts [--calls=20000] [--reps=5]
 *
 * No database: the key ring is loaded with a random secret. Each variant runs `calls` requests,
 * `reps` times after a warm-up; the minimum per variant is reported (the least disturbed by other
 * work on the machine). Keys differ per call, as in the bench, so the HMAC is never cached.
 */
import { randomBytes } from "node:crypto";
import { KeyRing } from "../lib/enqueue/keys";
import { normalizeRequest } from "../lib/enqueue/validate";
import { payloadFor } from "./contenders";

const arg = (name: string, d: number) => {
  const m = process.argv.find((a) => a.startsWith(`--${name}=`));
  return m ? Number(m.split("=")[1]) : d;
};
const CALLS = arg("calls", 20_000);
const REPS = arg("reps", 5);

const keys = new KeyRing(randomBytes(32));
await keys.load(async () => ({ key_secret: null, legacy_ms: 0 }));
const config = { maxPayloadBytes: 1024 * 1024, source: null, keys };

const variants: Record<string, (i: number) => unknown> = {
  "keyed (bench accept request)": (i) =>
    normalizeRequest(
      "invoice.capture",
      payloadFor(String(i)),
      {
        queue: "billing",
        idempotency: { key: `accept-${i}`, scope: "invoice-capture" },
      },
      config,
    ),
  keyless: (i) => normalizeRequest("invoice.capture", payloadFor(String(i)), { queue: "billing" }, config),
};

const best: Record<string, number> = {};
for (let rep = 0; rep <= REPS; rep++) {
  for (const [label, fn] of Object.entries(variants)) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) fn(rep * CALLS + i);
    const us = Number(process.hrtime.bigint() - t0) / 1000 / CALLS;
    if (rep > 0) best[label] = Math.min(best[label] ?? Number.POSITIVE_INFINITY, us);
  }
}
for (const [label, us] of Object.entries(best)) {
  process.stdout.write(`${label.padEnd(32)} ${us.toFixed(1).padStart(6)} µs per request\n`);
}
