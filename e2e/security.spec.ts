/**
 * Console security (docs/console.md, security): headers, framing, cross-origin mutations, sign-in throttling per
 * client address, and sessions that end on the server.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "@playwright/test";
import pg from "pg";
import { expect, test } from "./fixtures";
import { PASSWORD } from "./keys";
import { JobPage } from "./pages/job-page";

const baseURL = process.env.E2E_BASE_URL ?? "http://127.0.0.1:3100";
const WRONG = "wrong-password-marker-0001";
const NAME = "name-marker-0001";

interface Captured {
  headers: Record<string, string>;
  body: string;
}

/** A real sign-in request as the browser sends it (action id, multipart body), not delivered. */
async function captureSignIn(browser: Browser, url = baseURL): Promise<Captured> {
  const ctx = await browser.newContext({ baseURL: url });
  const page = await ctx.newPage();
  await page.goto("/sign-in");
  let captured: Captured | null = null;
  await page.route("**/sign-in", async (route) => {
    const req = route.request();
    if (req.method() === "POST") {
      captured = { headers: req.headers(), body: req.postData() ?? "" };
      await route.abort();
    } else await route.continue();
  });
  await page.getByLabel("Your name").fill(NAME);
  await page.getByLabel("Password").fill(WRONG);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => captured !== null).toBe(true);
  await ctx.close();
  const c = captured as unknown as Captured;
  expect(c.body).toContain(WRONG);
  expect(c.headers["next-action"]).toBeTruthy();
  return c;
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Sends the captured sign-in from a chosen loopback source address, as Node's http client. */
function replaySignIn(
  c: Captured,
  opts: { url?: string; localAddress?: string; password: string; name: string; headers?: Record<string, string> },
): Promise<Reply> {
  const target = new URL("/sign-in", opts.url ?? baseURL);
  const body = c.body.replaceAll(WRONG, opts.password).replaceAll(NAME, opts.name);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) {
    if (!["host", "content-length", "cookie", "connection"].includes(k)) headers[k] = v;
  }
  headers.origin = target.origin;
  Object.assign(headers, opts.headers ?? {});
  return new Promise((resolve, reject) => {
    const req = http.request(
      target,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        localAddress: opts.localAddress,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const sessionCookieOf = (r: Reply) => (r.headers["set-cookie"] ?? []).find((c) => /workhorse_console=/.test(c)) ?? null;

test("every response carries the security headers; the CSP nonce is fresh and on every script", async ({ request }) => {
  const a = await request.get("/sign-in");
  const b = await request.get("/sign-in");
  for (const res of [a, b]) {
    const h = res.headers();
    expect(h["x-powered-by"]).toBeUndefined();
    expect(h["x-content-type-options"]).toBe("nosniff");
    expect(h["referrer-policy"]).toBe("no-referrer");
    expect(h["x-frame-options"]).toBe("DENY");
    expect(h["strict-transport-security"]).toBeUndefined(); // plain http
    const csp = h["content-security-policy"] ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).not.toContain("unsafe-inline' 'self'");
    expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{16,}' 'strict-dynamic'/);
  }
  const nonceOf = (csp: string) => /'nonce-([^']+)'/.exec(csp)?.[1] ?? "";
  const na = nonceOf(a.headers()["content-security-policy"] ?? "");
  expect(na).not.toBe(nonceOf(b.headers()["content-security-policy"] ?? ""));
  const html = await a.text();
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  expect(scripts.length).toBeGreaterThan(3);
  for (const s of scripts) expect(s).toContain(`nonce="${na}"`);
  // Static files: nosniff and no X-Powered-By as well.
  const css = /href="(\/_next\/static\/[^"]+\.css)"/.exec(html)?.[1];
  expect(css).toBeTruthy();
  const asset = await request.get(css as string);
  expect(asset.headers()["x-content-type-options"]).toBe("nosniff");
  expect(asset.headers()["x-powered-by"]).toBeUndefined();
  // Forwarded headers from a client that is not a configured proxy change nothing.
  const spoofed = await request.get("/sign-in", { headers: { "x-forwarded-proto": "https" } });
  expect(spoofed.headers()["strict-transport-security"]).toBeUndefined();
});

test("the pages run under the CSP without violations", async ({ signedIn: page }) => {
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text());
  });
  for (const path of ["/", "/jobs", "/queues", "/dead-letters", "/enqueue", "/find", "/sessions"]) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  }
  // Hydrated: client navigation works.
  await page.getByRole("link", { name: "Jobs" }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  expect(violations).toEqual([]);
});

test("a page on another port cannot frame the console", async ({ signedIn: page }) => {
  const evil = http.createServer((_req, res) => {
    res.setHeader("content-type", "text/html");
    res.end(
      `<!doctype html><title>evil</title><h1>evil</h1><iframe id="f" src="${baseURL}/queues" width="800" height="600"></iframe>`,
    );
  });
  await new Promise<void>((r) => evil.listen(0, "127.0.0.1", r));
  const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
  const messages: string[] = [];
  page.on("console", (m) => messages.push(m.text()));
  try {
    const framed = page.waitForResponse((r) => r.url() === `${baseURL}/queues`);
    await page.goto(evilUrl);
    const res = await framed;
    expect(res.status()).toBe(200);
    expect(res.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    await expect.poll(() => messages.some((m) => /frame-ancestors/.test(m))).toBe(true);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(frame).toBeTruthy();
    // The frame holds Chromium's error page, not the console: nothing to click in it.
    expect(frame?.url()).not.toBe(`${baseURL}/queues`);
    expect(await frame?.locator("text=Queues").count()).toBe(0);
    expect(await frame?.getByRole("button").count()).toBe(0);
  } finally {
    evil.close();
  }
});

test("a cross-origin mutation is refused with 403 and changes nothing", async ({ signedIn: page, queue }) => {
  const jobId = await queue.enqueue("order.refund", { orderId: "ORD-403" }, { queue: "e2e-origin" });
  const job = new JobPage(page);
  await job.goto(jobId);
  let captured: Captured | null = null;
  await page.route(`**/jobs/${jobId}`, async (route) => {
    const req = route.request();
    if (req.method() === "POST") {
      captured = { headers: req.headers(), body: req.postData() ?? "" };
      await route.abort();
    } else await route.continue();
  });
  await job.purgeButton().click();
  await page.getByRole("dialog").getByLabel("Reason").fill("cross-origin test");
  await page.getByRole("dialog").getByRole("button", { name: "Confirm purge" }).click();
  await expect.poll(() => captured !== null).toBe(true);
  const c = captured as unknown as Captured;
  const send = (extra: Record<string, string>) =>
    page.request.post(`/jobs/${jobId}`, {
      headers: {
        "next-action": c.headers["next-action"] ?? "",
        "content-type": c.headers["content-type"] ?? "",
        accept: "text/x-component",
        ...extra,
      },
      data: c.body,
      maxRedirects: 0,
    });
  const port = new URL(baseURL).port;
  const attempts: Record<string, string>[] = [
    { origin: "http://evil.example", "x-forwarded-host": "evil.example" },
    { origin: "http://evil.example", "x-forwarded-host": "evil.example", "x-forwarded-proto": "http" },
    { origin: `https://127.0.0.1:${port}` }, // another scheme
    { origin: `http://127.0.0.1:${Number(port) + 1}` }, // another port
    { origin: `http://localhost:${port}` }, // another host
    { origin: "null" },
    {},
  ];
  for (const extra of attempts) {
    const res = await send(extra);
    expect(res.status(), JSON.stringify(extra)).toBe(403);
    expect(await res.text()).toContain("accepts changes only from its own pages");
  }
  expect((await queue.getJob(jobId))?.state).toBe("ready");
  // The same request from the console's own origin does purge: the refusals above were real.
  const ok = await send({ origin: new URL(baseURL).origin });
  expect(ok.status()).toBe(200);
  await expect.poll(async () => (await queue.getJob(jobId))?.state).toBe("purged");
});

test("sign-in throttling counts per client address: one address locked out, another signs in", async ({ browser }) => {
  const c = await captureSignIn(browser);
  for (let i = 0; i < 5; i++) {
    const r = await replaySignIn(c, {
      localAddress: "127.0.0.2",
      password: `${WRONG}-${i}`,
      name: "mallory",
      // A rotating client-chosen X-Forwarded-For does not buy more guesses.
      headers: { "x-forwarded-for": `198.51.100.${i}`, "x-real-ip": `198.51.100.${i}` },
    });
    expect(r.body).toContain("Wrong password");
    expect(sessionCookieOf(r)).toBeNull();
  }
  // 127.0.0.2 is now refused before its password is even checked, even the right one.
  const locked = await replaySignIn(c, {
    localAddress: "127.0.0.2",
    password: PASSWORD,
    name: "mallory",
    headers: { "x-forwarded-for": "203.0.113.77" },
  });
  expect(locked.body).toContain("Too many failed sign-ins");
  expect(sessionCookieOf(locked)).toBeNull();
  // Another address, same name, right password: signed in.
  const ok = await replaySignIn(c, { localAddress: "127.0.0.3", password: PASSWORD, name: "throttle-ok" });
  expect(sessionCookieOf(ok)).toMatch(/^workhorse_console=[^;]+;.*HttpOnly/i);
  expect(sessionCookieOf(ok)).toMatch(/SameSite=Strict/i);
  expect(sessionCookieOf(ok)).not.toMatch(/Secure/i);
  // The server saw the socket's address, not a header.
  const pool = new pg.Pool({ connectionString: process.env.E2E_DATABASE_URL, max: 1 });
  try {
    const { rows } = await pool.query(
      "select client_address from workhorse.console_session where actor = 'throttle-ok' order by created_at desc limit 1",
    );
    expect(rows).toEqual([{ client_address: "127.0.0.3" }]);
  } finally {
    await pool.end();
  }
});

test("signing out ends the session on the server: a copied cookie stops working", async ({
  signedIn: page,
  browser,
}) => {
  const cookies = await page.context().cookies();
  expect(cookies.map((c) => c.name)).toContain("workhorse_console");
  const copy = await browser.newContext({ baseURL });
  await copy.addCookies(cookies);
  const before = await copy.request.get("/jobs", { maxRedirects: 0 });
  expect(before.status()).toBe(200);
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in$/);
  const after = await copy.request.get("/jobs", { maxRedirects: 0 });
  expect(after.status()).toBe(307);
  expect(after.headers().location).toMatch(/\/sign-in\?next=%2Fjobs$/); // back to /jobs after signing in again
  const api = await copy.request.get("/api/jobs");
  expect(api.status()).toBe(401);
  await copy.close();
});

test("Sessions lists who is signed in; 'sign out everywhere' ends them all and is audited", async ({
  signedIn: page,
  browser,
}) => {
  const other = await browser.newContext({ baseURL });
  const second = await other.newPage();
  await second.goto("/sign-in");
  await second.getByLabel("Your name").fill("second-operator");
  await second.getByLabel("Password").fill(PASSWORD);
  await second.getByRole("button", { name: "Sign in" }).click();
  await second.getByRole("heading", { name: "Overview" }).waitFor();

  await page.getByRole("link", { name: "Sessions" }).click();
  const table = page.getByRole("table", { name: "Live console sessions" });
  await expect(table.getByRole("row").filter({ hasText: "second-operator" })).toHaveCount(1);
  await expect(
    table.getByRole("row").filter({ hasText: "e2e-operator" }).filter({ hasText: "(you, here)" }),
  ).toHaveCount(1);
  await page.getByRole("button", { name: "Sign out everywhere" }).click();
  await expect(page).toHaveURL(/\/sign-in$/);
  await second.goto("/jobs");
  await expect(second).toHaveURL(/\/sign-in\?next=%2Fjobs$/);
  await other.close();

  await page.getByLabel("Your name").fill("e2e-operator");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.goto("/audit?action=sign_out_everywhere");
  await expect(page.getByRole("cell", { name: "sign_out_everywhere" }).first()).toBeVisible();
});

/** One request as Node's http client sends it: the path goes out byte for byte (no URL normalising). */
function rawRequest(
  pathAndQuery: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer; chunked?: boolean } = {},
): Promise<Reply> {
  const target = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: pathAndQuery,
        method: opts.method ?? "GET",
        headers: {
          ...(opts.body && !opts.chunked ? { "content-length": String(opts.body.length) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    // The server may answer (and close) before the whole body is sent: that answer is what we want.
    req.on("error", (err) => ((err as NodeJS.ErrnoException).code === "EPIPE" ? undefined : reject(err)));
    if (opts.body && opts.chunked) {
      for (let i = 0; i < opts.body.length; i += 256 * 1024) req.write(opts.body.subarray(i, i + 256 * 1024));
      req.end();
    } else req.end(opts.body);
  });
}

const cookieHeaderOf = async (page: import("@playwright/test").Page) =>
  (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");

test("sign-in sends a signed-in visitor only to a path on this console, whatever `next` holds", async ({
  signedIn: page,
}) => {
  const hostile = [
    "/.//evil.example",
    "/..//evil.example",
    "/%2e%2e//evil.example",
    "/%252e%252e//evil.example",
    "/jobs/..//evil.example",
    "/jobs/.././/evil.example",
    "/%2F%2Fevil.example",
    "/%252F%252Fevil.example",
    "/%09/evil.example",
    "/%5Cevil.example",
    "/%255Cevil.example",
    "//evil.example",
    "https://evil.example/",
  ];
  const cookie = await cookieHeaderOf(page);
  for (const next of hostile) {
    const res = await rawRequest(`/sign-in?next=${next}`, { headers: { cookie } });
    expect(res.status, next).toBe(307);
    const location = res.headers.location ?? "";
    expect(location, next).toMatch(/^\/(?![/\\])/);
    expect(location, next).not.toMatch(/\/\/|\\|%5c|%2f%2f/i);
    expect(new URL(location, baseURL).origin, next).toBe(new URL(baseURL).origin);
  }
  // A plain local path still comes back.
  const ok = await rawRequest("/sign-in?next=%2Fjobs%3Fstate%3Dready", { headers: { cookie } });
  expect(ok.headers.location).toBe("/jobs?state=ready");
});

test("malformed percent-encoding in the path answers 400, not a server error", async ({ signedIn: page }) => {
  const cookie = await cookieHeaderOf(page);
  for (const p of ["/jobs/%E0%A4%A", "/queues/%E0%A4%A", "/api/jobs/%E0%A4%A", "/jobs/%", "/%zz"]) {
    for (const headers of [{ cookie }, {}] as Record<string, string>[]) {
      const res = await rawRequest(p, { headers });
      expect(res.status, `${p} ${headers.cookie ? "signed in" : "signed out"}`).toBe(400);
      expect(res.body).toContain("percent-encoding");
    }
  }
  // Well-formed encodings are untouched: they reach the console, which answers for the queue "ठ"
  // (no job was ever enqueued to it: 404 Queue not found).
  const wellFormed = await rawRequest("/queues/%E0%A4%A0", { headers: { cookie } });
  expect(wellFormed.status).toBe(404);
  expect(wellFormed.body).toContain("Queue not found");
});

test("a server-action body over the limit answers 413 with a message, with or without Content-Length", async ({
  browser,
}) => {
  const c = await captureSignIn(browser);
  const headers: Record<string, string> = {
    "next-action": c.headers["next-action"] ?? "",
    "content-type": c.headers["content-type"] ?? "",
    accept: "text/x-component",
    origin: new URL(baseURL).origin,
  };
  for (const [size, chunked] of [
    [4.5 * 1024 * 1024, false],
    [12 * 1024 * 1024, false],
    [4.5 * 1024 * 1024, true],
    [12 * 1024 * 1024, true],
  ] as const) {
    const body = Buffer.alloc(size, "a");
    const res = await rawRequest("/sign-in", { method: "POST", headers, body, chunked });
    expect(res.status, `${size} bytes${chunked ? ", chunked" : ""}`).toBe(413);
    expect(res.body).toContain("too large");
  }
  // A normal sign-in body still goes through (a wrong password, answered as such).
  const small = await rawRequest("/sign-in", { method: "POST", headers, body: Buffer.from(c.body) });
  expect(small.status).toBe(200);
  expect(small.body).toContain("Wrong password");
});

test("find by key digest answers 'too many lookups, wait N s' past 30 a minute for one session", async ({
  signedIn: page,
}) => {
  for (let i = 0; i < 30; i++) {
    const res = await page.request.get(`/find?digest=${i.toString(16).padStart(12, "0")}`);
    expect(res.status()).toBe(200);
    expect(await res.text()).not.toContain("Too many digest lookups");
  }
  const refused = await page.request.get("/find?digest=0123456789ab");
  expect(refused.status()).toBe(200);
  expect(await refused.text()).toMatch(/Too many digest lookups from this session \(30 a minute\): wait \d+ s/);
});
