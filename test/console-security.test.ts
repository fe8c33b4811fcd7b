// Console access: the sign-in limiter, how the server reads a request's address and origin, and
// revocable sessions in PostgreSQL.
import fc from "fast-check";
import { beforeAll, describe, expect, test, vi } from "vitest";
import { setupQueueTests } from "./helpers";

vi.mock("server-only", () => ({}));

const { FailureLimiter } = await import("@/lib/console/auth/rate-limit");
const { safeReturnPath } = await import("@/lib/console/auth/return-to");
const { consoleConfig } = await import("@/lib/console/databases/config");
const { isSameOrigin, sanitizeRequestHeaders, trustedProxies, CLIENT_ADDRESS_HEADER, HOST_HEADER, PROTO_HEADER } =
  await import("@/lib/console/auth/request-info");
const { createSession, deleteAllSessions, deleteSession, listSessions, lookupSession, passwordFingerprint } =
  await import("@/lib/console/auth/session-store");

const t = setupQueueTests();
beforeAll(() => t.ready());

const limits = { perAddress: 3, perName: 5, global: 8, windowMs: 1000, slowdownMs: 700 };

describe("sign-in limiter", () => {
  test("failures refuse only the address they came from, for the window", () => {
    const l = new FailureLimiter(limits);
    for (let i = 0; i < 3; i++) l.fail("127.0.0.2", `guess${i}`, 100 + i);
    expect(l.check("127.0.0.2", "alice", 200)).toEqual({ refuseMs: 900, delayMs: 0 });
    expect(l.check("127.0.0.3", "alice", 200)).toEqual({ refuseMs: 0, delayMs: 0 });
    expect(l.check("127.0.0.2", "alice", 1101)).toEqual({ refuseMs: 0, delayMs: 0 });
  });

  test("many failures for one name, or overall, slow sign-ins down but never refuse another address", () => {
    const l = new FailureLimiter(limits);
    // Five addresses, one failure each, all typing "Alice": the name is slowed, not refused.
    for (let i = 0; i < 5; i++) l.fail(`10.0.0.${i}`, i % 2 ? "alice" : "ALICE", 100);
    expect(l.check("127.0.0.9", "alice", 200)).toEqual({ refuseMs: 0, delayMs: 700 });
    expect(l.check("127.0.0.9", "bob", 200)).toEqual({ refuseMs: 0, delayMs: 0 });
    for (let i = 0; i < 3; i++) l.fail(`10.0.1.${i}`, `n${i}`, 100);
    expect(l.check("127.0.0.9", "bob", 200)).toEqual({ refuseMs: 0, delayMs: 700 });
  });

  test("a correct password clears the address's failures", () => {
    const l = new FailureLimiter(limits);
    for (let i = 0; i < 2; i++) l.fail("a", "x", 100);
    l.succeed("a");
    l.fail("a", "x", 150);
    expect(l.check("a", "x", 200).refuseMs).toBe(0);
  });
});

describe("the path sign-in returns to", () => {
  const base = "http://console.invalid";
  /** What a browser would do with `Location: <path>`: stay on this origin, on a path without `//` or `\\`. */
  const assertLocal = (input: string, out: string | null) => {
    if (out === null) return;
    expect(out, input).toMatch(/^\/(?![/\\])/);
    const url = new URL(out, base);
    expect(url.origin, input).toBe(base);
    for (const form of [url.pathname, decodeURIComponent(url.pathname)]) {
      expect(form, input).not.toMatch(/\/\/|\\|\p{Cc}/u);
      expect(form.split("/"), input).not.toContain("..");
      expect(form.split("/"), input).not.toContain(".");
    }
    // Stable: the path returned is itself accepted unchanged.
    expect(safeReturnPath(out), input).toBe(out);
  };

  test.each([
    "/.//evil.example",
    "/..//evil.example",
    "/%2e%2e//evil.example",
    "/%2E%2E//evil.example",
    "/.%2e//evil.example",
    "/jobs/..//evil.example",
    "/jobs/.././/evil.example",
    "/jobs/%2e%2e/%2e%2e//evil.example",
    "/./\\evil.example",
    "/%2F%2Fevil.example",
    "/%2f/evil.example",
    "/%2Fevil.example",
    "/.%2F%2Fevil.example",
    "/\t/evil.example",
    "/%09/evil.example",
    "/\n/evil.example",
    "/%5Cevil.example",
    "/%5c%5cevil.example",
    "/.%5C%5Cevil.example",
    "/%E0%A4%A",
    "/jobs/../sign-in",
    "/jobs/../api/jobs",
  ])("hostile %j is refused", (input) => {
    expect(safeReturnPath(input)).toBeNull();
  });

  test("ordinary console paths come back as they were", () => {
    for (const ok of [
      "/",
      "/jobs",
      "/jobs?state=ready&queue=billing",
      "/queues/billing%20eu",
      "/find?digest=0123456789ab",
    ]) {
      expect(safeReturnPath(ok)).toBe(ok);
    }
  });

  test("anything built from slashes, dots, encodings and separators is refused or a local path", () => {
    const piece = fc.constantFrom(
      "/",
      "//",
      ".",
      "..",
      "%2e",
      "%2E",
      "%2f",
      "%2F",
      "%5c",
      "%5C",
      "\\",
      "\t",
      "%09",
      "%00",
      "%",
      "?",
      "#",
      "evil.example",
      "jobs",
      "sign-in",
      "api",
      ":",
      "@",
      "%40",
      "%25",
    );
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 8 }), (parts) => {
        const input = `/${parts.join("")}`;
        assertLocal(input, safeReturnPath(input));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("what proxy.ts refuses before Next.js", () => {
  test("the body limit is next.config.js's server-action limit", async () => {
    const { MAX_BODY_BYTES } = await import("../proxy");
    const configPath: string = "../next.config.js"; // plain JS, no types
    const config = (await import(configPath)).default as {
      experimental: { serverActions: { bodySizeLimit: number } };
    };
    expect(config.experimental.serverActions.bodySizeLimit).toBe(MAX_BODY_BYTES);
  });

  test("malformed percent-encoding is told apart from well-formed", async () => {
    const { wellFormedPath } = await import("../proxy");
    for (const bad of ["/jobs/%E0%A4%A", "/queues/%E0%A4%A", "/api/jobs/%E0%A4%A", "/jobs/%", "/%zz", "/%C0%AF"]) {
      expect(wellFormedPath(bad), bad).toBe(false);
    }
    for (const ok of ["/", "/jobs/0193a1b2-0000-7000-8000-000000000001", "/queues/%E0%A4%A0", "/queues/a%20b"]) {
      expect(wellFormedPath(ok), ok).toBe(true);
    }
  });
});

describe("request address and origin", () => {
  const sanitize = (h: Record<string, string | string[] | undefined>, peer: string, trusted = "") => {
    const r = sanitizeRequestHeaders(h, peer, false, trustedProxies({ WORKHORSE_TRUSTED_PROXY: trusted }));
    return { ...r, headers: h };
  };

  test("without a trusted proxy, forwarded headers are dropped and the socket decides", () => {
    const { clientAddress, proto, host, headers } = sanitize(
      {
        host: "127.0.0.1:3000",
        "x-forwarded-for": "203.0.113.9",
        "x-forwarded-host": "evil.example",
        "x-forwarded-proto": "https",
        "x-real-ip": "203.0.113.9",
        [CLIENT_ADDRESS_HEADER]: "198.51.100.1",
        [PROTO_HEADER]: "https",
        [HOST_HEADER]: "evil.example",
      },
      "::ffff:127.0.0.2",
    );
    expect({ clientAddress, proto, host }).toEqual({
      clientAddress: "127.0.0.2",
      proto: "http",
      host: "127.0.0.1:3000",
    });
    expect(headers).toMatchObject({
      [CLIENT_ADDRESS_HEADER]: "127.0.0.2",
      [PROTO_HEADER]: "http",
      [HOST_HEADER]: "127.0.0.1:3000",
      "x-forwarded-host": "127.0.0.1:3000",
      "x-forwarded-for": "127.0.0.2",
      "x-forwarded-proto": "http",
    });
    expect(headers["x-real-ip"]).toBeUndefined();
  });

  test("behind the trusted proxy, its report is used (rightmost untrusted hop)", () => {
    const r = sanitize(
      {
        host: "internal:3000",
        "x-forwarded-for": "198.51.100.7, 203.0.113.9, 10.0.0.5",
        "x-forwarded-host": "console.example.com",
        "x-forwarded-proto": "https",
      },
      "10.0.0.5",
      "10.0.0.5, 10.0.0.6",
    );
    expect([r.clientAddress, r.proto, r.host]).toEqual(["203.0.113.9", "https", "console.example.com"]);
    // The same headers from anyone else are ignored.
    const other = sanitize(
      { host: "internal:3000", "x-forwarded-for": "1.2.3.4", "x-forwarded-host": "x", "x-forwarded-proto": "https" },
      "10.0.0.7",
      "10.0.0.5",
    );
    expect([other.clientAddress, other.proto, other.host]).toEqual(["10.0.0.7", "http", "internal:3000"]);
  });

  test("same origin means the same scheme, host and port", () => {
    expect(isSameOrigin("http://127.0.0.1:3000", "http", "127.0.0.1:3000")).toBe(true);
    expect(isSameOrigin("https://console.example.com", "https", "console.example.com:443")).toBe(true);
    expect(isSameOrigin("https://127.0.0.1:3000", "http", "127.0.0.1:3000")).toBe(false);
    expect(isSameOrigin("http://127.0.0.1:3001", "http", "127.0.0.1:3000")).toBe(false);
    expect(isSameOrigin("http://evil.example", "http", "127.0.0.1:3000")).toBe(false);
    expect(isSameOrigin("null", "http", "127.0.0.1:3000")).toBe(false);
    expect(isSameOrigin(null, "http", "127.0.0.1:3000")).toBe(false);
  });
});

describe("sessions in PostgreSQL", () => {
  const cfg = consoleConfig({ WORKHORSE_CONSOLE_PASSWORD: "first password", WORKHORSE_SESSION_SECRET: "s".repeat(40) });
  const fp = passwordFingerprint(cfg.password!, cfg.sessionSecret);

  test("only the hash of the session id is stored, and deleting the row ends the session", async () => {
    const { id, session } = await createSession(t.pool, { actor: "ana", fingerprint: fp, clientAddress: "127.0.0.2" });
    expect(session.actor).toBe("ana");
    const dump = JSON.stringify(await t.sql("select * from workhorse.console_session"));
    expect(dump).not.toContain(id);
    expect((await lookupSession(t.pool, id, fp))?.actor).toBe("ana");
    expect(await deleteSession(t.pool, id)).toBe(true);
    expect(await lookupSession(t.pool, id, fp)).toBeNull();
  });

  test("a password change ends every session made with the old one", async () => {
    const { id } = await createSession(t.pool, { actor: "ben", fingerprint: fp, clientAddress: null });
    const changed = consoleConfig({
      WORKHORSE_CONSOLE_PASSWORD: "second password",
      WORKHORSE_SESSION_SECRET: "s".repeat(40),
    });
    const fp2 = passwordFingerprint(changed.password!, changed.sessionSecret);
    expect(fp2).not.toBe(fp);
    expect(await lookupSession(t.pool, id, fp2)).toBeNull();
    // ... and it is gone, not merely hidden: the old password does not bring it back.
    expect(await lookupSession(t.pool, id, fp)).toBeNull();
  });

  test("idle and absolute expiry", async () => {
    const idle = await createSession(t.pool, { actor: "cy", fingerprint: fp, clientAddress: null });
    const old = await createSession(t.pool, { actor: "di", fingerprint: fp, clientAddress: null });
    await t.sql(
      "update workhorse.console_session set idle_expires_at = now() - interval '1 second' where actor = 'cy'",
    );
    await t.sql(
      `update workhorse.console_session set created_at = now() - interval '13 hours', last_seen_at = now() - interval '2 minutes',
              expires_at = now() + interval '30 seconds', idle_expires_at = now() + interval '30 seconds' where actor = 'di'`,
    );
    expect(await lookupSession(t.pool, idle.id, fp)).toBeNull();
    // Activity extends the idle expiry, never past the absolute one.
    const touched = await lookupSession(t.pool, old.id, fp);
    expect(touched?.idleExpiresAt.getTime()).toBe(touched?.expiresAt.getTime());
    await t.sql("update workhorse.console_session set expires_at = now(), idle_expires_at = now() where actor = 'di'");
    expect(await lookupSession(t.pool, old.id, fp)).toBeNull();
  });

  test("sign out everywhere ends them all; the list shows live sessions of the current password", async () => {
    await deleteAllSessions(t.pool);
    await createSession(t.pool, { actor: "eve", fingerprint: fp, clientAddress: "127.0.0.3" });
    await createSession(t.pool, { actor: "fay", fingerprint: fp, clientAddress: "127.0.0.4" });
    await createSession(t.pool, { actor: "gus", fingerprint: "another-password", clientAddress: null });
    expect((await listSessions(t.pool, fp)).map((s) => s.actor).sort()).toEqual(["eve", "fay"]);
    expect(await deleteAllSessions(t.pool)).toBe(3);
    expect(await listSessions(t.pool, fp)).toEqual([]);
  });
});
