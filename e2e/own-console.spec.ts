/**
 * Specs that need a console of their own (started here on the e2e database, from the same build):
 * a password change ending older sessions across a restart, and https behind a trusted proxy.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import type { Browser } from "@playwright/test";
import { expect, test } from "./fixtures";

const WRONG = "wrong-password-marker-0002";
const NAME = "name-marker-0002";
const root = path.resolve(import.meta.dirname, "..");

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function startConsole(
  port: number,
  env: Record<string, string>,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(path.join(root, "node_modules", ".bin", "tsx"), ["scripts/start.ts"], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: process.env.E2E_DATABASE_URL,
      HOST: "127.0.0.1",
      PORT: String(port),
      WORKHORSE_CONSOLE_READONLY: "",
      WORKHORSE_TRUSTED_PROXY: "",
      ...env,
    },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`console exited (${child.exitCode})`);
    try {
      if ((await fetch(`${url}/sign-in`, { redirect: "manual" })).status > 0) break;
    } catch {}
    if (Date.now() > until) throw new Error("console did not start");
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

interface Captured {
  headers: Record<string, string>;
  body: string;
}

async function captureSignIn(browser: Browser, url: string): Promise<Captured> {
  const ctx = await browser.newContext({ baseURL: url });
  const page = await ctx.newPage();
  await page.goto("/sign-in");
  let captured: Captured | null = null;
  await page.route("**/sign-in", async (route) => {
    if (route.request().method() === "POST") {
      captured = { headers: route.request().headers(), body: route.request().postData() ?? "" };
      await route.abort();
    } else await route.continue();
  });
  await page.getByLabel("Your name").fill(NAME);
  await page.getByLabel("Password").fill(WRONG);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => captured !== null).toBe(true);
  await ctx.close();
  return captured as unknown as Captured;
}

function signIn(
  c: Captured,
  url: string,
  password: string,
  extra: Record<string, string> = {},
): Promise<{ headers: http.IncomingHttpHeaders; body: string }> {
  const target = new URL("/sign-in", url);
  const body = c.body.replaceAll(WRONG, password).replaceAll(NAME, "own-console-operator");
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) {
    if (!["host", "content-length", "cookie", "connection"].includes(k)) headers[k] = v;
  }
  Object.assign(headers, { origin: target.origin }, extra);
  headers["content-length"] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method: "POST", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const cookieOf = (r: { headers: http.IncomingHttpHeaders }) =>
  (r.headers["set-cookie"] ?? []).find((c) => /workhorse_console=/.test(c)) ?? null;

test.describe.configure({ timeout: 180_000 });

test("changing the password ends every session made with the old one", async ({ browser, request }) => {
  const port = await freePort();
  const secret = randomBytes(32).toString("hex");
  const first = `first-${randomBytes(4).toString("hex")}`;
  let console1 = await startConsole(port, { WORKHORSE_CONSOLE_PASSWORD: first, WORKHORSE_SESSION_SECRET: secret });
  try {
    const c = await captureSignIn(browser, console1.url);
    const res = await signIn(c, console1.url, first);
    const cookie = cookieOf(res)?.split(";")[0] ?? "";
    expect(cookie).toMatch(/^workhorse_console=/);
    const get = (url: string) => request.get(`${url}/jobs`, { headers: { cookie }, maxRedirects: 0 });
    expect((await get(console1.url)).status()).toBe(200);

    // Restart with the same session secret: the cookie still works (the password did not change) …
    await console1.stop();
    console1 = await startConsole(port, { WORKHORSE_CONSOLE_PASSWORD: first, WORKHORSE_SESSION_SECRET: secret });
    expect((await get(console1.url)).status()).toBe(200);

    // … restart with a new password and the same secret: the old session is over.
    await console1.stop();
    console1 = await startConsole(port, {
      WORKHORSE_CONSOLE_PASSWORD: `second-${randomBytes(4).toString("hex")}`,
      WORKHORSE_SESSION_SECRET: secret,
    });
    const after = await get(console1.url);
    expect(after.status()).toBe(307);
    expect(after.headers().location).toMatch(/\/sign-in\?next=%2Fjobs$/);
  } finally {
    await console1.stop();
  }
});

test("behind a trusted proxy that reports https: HSTS and a Secure __Host- cookie; the proxy's origin counts", async ({
  browser,
  request,
}) => {
  const port = await freePort();
  const password = `proxy-${randomBytes(4).toString("hex")}`;
  const own = await startConsole(port, { WORKHORSE_CONSOLE_PASSWORD: password, WORKHORSE_TRUSTED_PROXY: "127.0.0.1" });
  try {
    const viaProxy = { "x-forwarded-proto": "https", "x-forwarded-host": "console.example.com" };
    const page = await request.get(`${own.url}/sign-in`, { headers: viaProxy });
    expect(page.headers()["strict-transport-security"]).toMatch(/max-age=\d+/);
    expect(page.headers()["content-security-policy"]).toContain("upgrade-insecure-requests");

    const c = await captureSignIn(browser, own.url);
    // The browser's origin is the proxy's public one.
    const res = await signIn(c, own.url, password, { ...viaProxy, origin: "https://console.example.com" });
    const cookie = cookieOf(res) ?? "";
    expect(cookie).toMatch(/^__Host-workhorse_console=/);
    expect(cookie).toMatch(/;\s*Secure/i);
    expect(cookie).toMatch(/;\s*Path=\//i);
    expect(cookie).not.toMatch(/Domain=/i);
    // The console's own http origin is not the proxy's https one: refused.
    const mismatch = await signIn(c, own.url, password, viaProxy);
    expect(mismatch.headers["set-cookie"]).toBeUndefined();
  } finally {
    await own.stop();
  }
});
