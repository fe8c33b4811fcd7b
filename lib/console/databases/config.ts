/**
 * Console configuration from the environment (read per call so tests can change it):
 *
 * - `WORKHORSE_CONSOLE_PASSWORD`: the sign-in password. Or `WORKHORSE_CONSOLE_PASSWORD_HASH`:
 *   `scrypt$<salt hex>$<hash hex>` as printed by `npx tsx scripts/start.ts --hash-password`.
 *   Neither set: no sign-in, and the console serves loopback clients only (with a banner).
 * - `WORKHORSE_CONSOLE_READONLY=1`: every mutation is hidden and refused.
 * - `WORKHORSE_SESSION_SECRET`: 32+ characters sealing the session cookie. `scripts/start.ts` makes a
 *   random one per start when unset (sessions then end when the console restarts).
 * - `WORKHORSE_METRICS_TOKEN`: 16+ characters turning `GET /metrics` on (meter.ts, metrics.ts);
 *   `scripts/start.ts` refuses a shorter one (`metricsTokenProblem`).
 */
import { createHash, randomBytes, scryptSync, timingSafeEqual } from "node:crypto";

export type PasswordCheck = { kind: "plain"; digest: Buffer } | { kind: "scrypt"; salt: Buffer; hash: Buffer };

interface ConsoleConfig {
  password: PasswordCheck | null;
  readOnly: boolean;
  sessionSecret: string;
}

const processSecret = randomBytes(32).toString("hex");

export function consoleConfig(env: Record<string, string | undefined> = process.env): ConsoleConfig {
  let password: PasswordCheck | null = null;
  const hash = env.WORKHORSE_CONSOLE_PASSWORD_HASH?.trim();
  const plain = env.WORKHORSE_CONSOLE_PASSWORD;
  if (hash) {
    const m = /^scrypt\$([0-9a-f]{16,})\$([0-9a-f]{64})$/i.exec(hash);
    if (!m) throw new Error("WORKHORSE_CONSOLE_PASSWORD_HASH must look like scrypt$<salt hex>$<64 hex>");
    password = { kind: "scrypt", salt: Buffer.from(m[1] as string, "hex"), hash: Buffer.from(m[2] as string, "hex") };
  } else if (plain) {
    password = { kind: "plain", digest: createHash("sha256").update(plain, "utf8").digest() };
  }
  const secret = env.WORKHORSE_SESSION_SECRET;
  return {
    password,
    readOnly: env.WORKHORSE_CONSOLE_READONLY === "1" || env.WORKHORSE_CONSOLE_READONLY === "true",
    sessionSecret: secret && secret.length >= 32 ? secret : processSecret,
  };
}

/** `scrypt$salt$hash` for WORKHORSE_CONSOLE_PASSWORD_HASH. */
export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `scrypt$${salt.toString("hex")}$${hash.toString("hex")}`;
}

/** Constant-time check of a candidate password. */
export function passwordMatches(check: PasswordCheck, candidate: string): boolean {
  if (check.kind === "plain") {
    const digest = createHash("sha256").update(candidate, "utf8").digest();
    return timingSafeEqual(digest, check.digest);
  }
  const got = scryptSync(candidate, check.salt, check.hash.length);
  return timingSafeEqual(got, check.hash);
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** True for 127.0.0.0/8, ::1 and localhost (with or without a port). */
export function isLoopbackHost(hostHeader: string | null | undefined): boolean {
  if (!hostHeader) return false;
  let host = hostHeader.trim().toLowerCase();
  if (host.startsWith("[")) host = host.slice(0, host.indexOf("]") + 1);
  else if (host.split(":").length === 2) host = host.split(":")[0] as string;
  if (LOOPBACK_HOSTS.has(host)) return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The shortest metrics token accepted: shorter ones are refused as if unset (a guessable token is no guard). */
export const MIN_TOKEN_LENGTH = 16;

/**
 * The sentence `scripts/start.ts` stops with when `WORKHORSE_METRICS_TOKEN` is set but shorter than
 * `MIN_TOKEN_LENGTH` (the console would serve with `/metrics` off, 404); null when it is unset,
 * empty (metrics off, as documented) or long enough.
 */
export function metricsTokenProblem(env: Record<string, string | undefined> = process.env): string | null {
  const token = env.WORKHORSE_METRICS_TOKEN;
  if (!token || token.length >= MIN_TOKEN_LENGTH) return null;
  return `WORKHORSE_METRICS_TOKEN is ${token.length} characters; it must be at least ${MIN_TOKEN_LENGTH} to turn /metrics on (e.g. \`openssl rand -hex 24\`), or unset to leave /metrics off.`;
}
