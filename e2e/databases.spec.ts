import { randomBytes } from "node:crypto";
import net from "node:net";
import type { Page } from "@playwright/test";
import pg from "pg";
import { Queue } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { seriousAxe } from "./pages/checks";
import { everyPage, timeFor } from "./pages/every-page";

/**
 * The console serving several databases (scripts/e2e.mjs: "Main" is the e2e database, "Staging" a
 * production one, "Archive" a read-only one, "Gone" one on a server of its own, which the fleet test
 * stops for real; in CI's Citus pass also "Citus", a distributed database on a Citus cluster, where
 * the find test enqueues its job). Jobs are seeded through the core into each real database.
 */

const run = randomBytes(3).toString("hex");

async function withQueue<T>(url: string | undefined, fn: (q: Queue, pool: pg.Pool) => Promise<T>): Promise<T> {
  if (!url) throw new Error("run the e2e suite with `npm run test:e2e` (it sets the databases' URLs).");
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const queue = new Queue({ pool, maintenance: false, source: "e2e" });
  try {
    return await fn(queue, pool);
  } finally {
    await queue.close();
    await pool.end();
  }
}

const staging = <T>(fn: (q: Queue, pool: pg.Pool) => Promise<T>) => withQueue(process.env.E2E_STAGING_DATABASE_URL, fn);
const archive = <T>(fn: (q: Queue, pool: pg.Pool) => Promise<T>) => withQueue(process.env.E2E_ARCHIVE_DATABASE_URL, fn);
const citusUrl = process.env.E2E_CITUS_DATABASE_URL || undefined;
const citus = <T>(fn: (q: Queue, pool: pg.Pool) => Promise<T>) => withQueue(citusUrl, fn);
/** The configured databases in order ("Citus" only when scripts/e2e.mjs was given a cluster). */
const DATABASES = ["Main", "Staging", "Archive", ...(citusUrl ? ["Citus"] : []), "Gone"];
const ANSWERING = DATABASES.filter((d) => d !== "Gone");
/** Where the find test's job lives: the distributed database when there is one. */
const [HOME, home] = citusUrl ? (["Citus", citus] as const) : (["Staging", staging] as const);

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Stops the "Gone" database's server for real (a fast shutdown: its sessions, the console's among
 * them, are ended) and waits until its port refuses connections. Idempotent: the tests that need it
 * down call it too, so each also runs alone.
 */
async function stopGone(): Promise<void> {
  const pid = Number(process.env.E2E_GONE_PID);
  const port = Number(process.env.E2E_GONE_PORT);
  if (!pid || !port) throw new Error("run the e2e suite with `npm run test:e2e` (it starts the Gone database).");
  try {
    process.kill(pid, "SIGINT");
  } catch {
    // Already stopped.
  }
  await expect.poll(() => listening(port), { timeout: 20_000 }).toBe(false);
}

async function jobState(pool: pg.Pool, id: string): Promise<string> {
  const { rows } = await pool.query<{ state: string }>("select state::text from workhorse.job where id = $1", [id]);
  return rows[0]?.state ?? "missing";
}

test("the fleet page: a database stopped for real shows as down while the others answer, the page in the browser under 2 s", async ({
  signedIn,
}) => {
  await staging((q) => q.enqueue("fleet.probe", {}, { queue: `fleet-${run}` }));
  const table = signedIn.getByRole("table", { name: "Databases" });
  const row = (name: string) => table.locator(`tr[data-database=${name}]`);
  // Every database answers, Gone too: a real Workhorse database the console has connections to.
  // (Reloaded until then: the console's first reads of a database open its connections.)
  await expect(async () => {
    await signedIn.goto("/fleet");
    for (const name of DATABASES) {
      await expect(row(name)).toContainText("Up", { timeout: 1000 });
    }
  }).toPass({ timeout: 30_000 });
  await stopGone();
  // From the navigation's start to every row shown with its state, as the browser gets the page:
  // the browser's own clock (performance.now() counts from the navigation's start), checked at each
  // animation frame while the page arrives (the rows are in the server's HTML; scripts come after).
  const res = await signedIn.goto("/fleet", { waitUntil: "commit" });
  const shown = await signedIn.waitForFunction(
    (answering) => {
      const text = (name: string) => document.querySelector(`table tr[data-database="${name}"]`)?.textContent ?? "";
      const ready = text("Gone").includes("Down") && answering.every((n) => text(n).includes("Up"));
      if (!ready) return false;
      const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      return { visibleMs: Math.round(performance.now()), responseEndMs: Math.round(n?.responseEnd ?? -1) };
    },
    ANSWERING,
    { polling: "raf", timeout: 10_000 },
  );
  const timing = (await shown.jsonValue()) as { visibleMs: number; responseEndMs: number };
  expect(res?.status()).toBe(200);
  test.info().annotations.push({ type: "fleet page", description: JSON.stringify(timing) });
  expect(timing.visibleMs, `the rows were shown ${JSON.stringify(timing)}`).toBeLessThan(2000);
  await expect(row("Gone")).toContainText("Down");
  for (const name of ANSWERING) await expect(row(name)).toContainText("Up");
  // Its error says why: the server refuses connections, or ended the console's session as it stopped.
  await expect(row("Gone")).toContainText(/ECONNREFUSED|terminat/i);
  await expect(signedIn.getByTestId("current-database")).toHaveText("All databases");
});

test("an old link goes to the first database; the header names it; switching keeps the page", async ({ signedIn }) => {
  await signedIn.goto("/jobs?state=ready");
  await expect(signedIn).toHaveURL(/\/db\/Main\/jobs\?state=ready$/);
  await expect(signedIn.getByTestId("current-database")).toHaveText("Main");
  await signedIn.getByText("Switch database").click();
  await signedIn.getByRole("link", { name: "Staging (production)" }).click();
  await expect(signedIn).toHaveURL(/\/db\/Staging\/jobs\?state=ready$/);
  await expect(signedIn.getByTestId("current-database")).toHaveText("Staging · production");
  await expect(signedIn.getByRole("heading", { name: "Jobs" })).toBeVisible();
  // The console's links stay in the database the page shows.
  await signedIn.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Queues" }).click();
  await expect(signedIn).toHaveURL(/\/db\/Staging\/queues$/);
  await signedIn.goBack();
  await expect(signedIn).toHaveURL(/\/db\/Staging\/jobs\?state=ready$/);
  // A name that is not configured is a 404 naming the databases, not a page of another one.
  const res = await signedIn.request.get("/db/Nowhere/jobs");
  expect(res.status()).toBe(404);
  expect(await res.text()).toContain(`its databases are ${DATABASES.join(", ")}`);
});

test("a job enqueued in one database is found by key from the find page, in that database only", async ({
  signedIn,
}) => {
  await stopGone();
  const key = `order:ORD-${run}`;
  const jobId = await home((q) =>
    q.enqueue("order.ship", { order: run }, { queue: `orders-${run}`, idempotency: { key, scope: "checkout" } }),
  );
  await signedIn.goto("/db/Main/find");
  await signedIn.getByLabel("Scope").fill("checkout");
  await signedIn.getByLabel("Key", { exact: true }).fill(key);
  await signedIn.getByRole("button", { name: "Find", exact: true }).click();
  const everywhere = signedIn.getByRole("table", { name: "The key in every database" });
  await expect(everywhere).toBeVisible();
  await expect(signedIn.getByText(`1 of ${DATABASES.length} databases hold this key.`)).toBeVisible();
  await expect(everywhere.locator(`tr[data-database=${HOME}]`)).toContainText("Found");
  for (const name of ANSWERING.filter((d) => d !== HOME)) {
    await expect(everywhere.locator(`tr[data-database=${name}]`)).toContainText("Not here");
  }
  await expect(everywhere.locator("tr[data-database=Gone]")).toContainText("Down");
  await everywhere.getByRole("link", { name: jobId }).click();
  await expect(signedIn).toHaveURL(new RegExp(`/db/${HOME}/jobs/${jobId}$`));
  await expect(signedIn.getByTestId("current-database")).toContainText(HOME);
  // The job's id does not exist in Main: its page there is a 404.
  const res = await signedIn.request.get(`/db/Main/jobs/${jobId}`);
  expect(res.status()).toBe(404);
});

test("a read-only database refuses a purge with the message and nothing changes", async ({ signedIn }) => {
  const queueName = `archive-${run}`;
  const jobId = await archive((q) => q.enqueue("report.build", { n: 1 }, { queue: queueName }));
  await signedIn.goto(`/db/Archive/jobs/${jobId}`);
  await expect(signedIn.getByRole("note").filter({ hasText: "Archive is read-only" })).toBeVisible();
  await signedIn.getByRole("button", { name: "Purge job…" }).click();
  const dialog = signedIn.getByRole("dialog");
  await dialog.getByLabel("Reason").fill("e2e: read-only check");
  await dialog.getByRole("button", { name: "Confirm purge" }).click();
  await expect(dialog.getByRole("alert")).toHaveText(
    'Refused: The database "Archive" is read-only (configured readonly): nothing was changed.',
  );
  expect(await archive((_q, pool) => jobState(pool, jobId))).toBe("ready");
});

test("a production database asks for its name typed out before a purge", async ({ signedIn }) => {
  const jobId = await staging((q) => q.enqueue("report.build", { n: 2 }, { queue: `staging-${run}` }));
  await signedIn.goto(`/db/Staging/jobs/${jobId}`);
  await expect(signedIn.getByRole("note").filter({ hasText: "Staging is a production database" })).toBeVisible();
  await signedIn.getByRole("button", { name: "Purge job…" }).click();
  const dialog = signedIn.getByRole("dialog");
  await dialog.getByLabel("Reason").fill("e2e: production check");
  const typed = dialog.getByLabel("Type Staging to confirm");
  await typed.fill("staging");
  await dialog.getByRole("button", { name: "Confirm purge" }).click();
  // The browser holds the form while the name does not match: nothing was sent, nothing changed.
  expect(await typed.evaluate((el) => (el as HTMLInputElement).validity.valid)).toBe(false);
  expect(await staging((_q, pool) => jobState(pool, jobId))).toBe("ready");
  await typed.fill("Staging");
  await dialog.getByRole("button", { name: "Confirm purge" }).click();
  await expect(dialog.getByRole("status")).toContainText("Purged 1 job");
  expect(await staging((_q, pool) => jobState(pool, jobId))).toBe("purged");
  // The audit row names the database the action ran on.
  const audited = await staging(async (_q, pool) => {
    const { rows } = await pool.query<{ actor: string; database: string | null }>(
      "select actor, database from workhorse.operator_audit where action = 'purge_job' and target = $1",
      [`job:${jobId}`],
    );
    return rows;
  });
  expect(audited).toEqual([{ actor: "e2e-operator", database: "Staging" }]);
});

test("/metrics labels every database's state with its name; a stopped one is left out", async ({ request }) => {
  await stopGone();
  const res = await request.get("/metrics", { headers: { authorization: `Bearer ${process.env.E2E_METRICS_TOKEN}` } });
  expect(res.status()).toBe(200);
  const body = await res.text();
  for (const name of ANSWERING) {
    expect(body).toMatch(new RegExp(`^workhorse_bindings\\{[^}]*database="${name}"[^}]*\\} `, "m"));
  }
  expect(body).not.toContain('database="Gone"');
  expect(body.match(/^# TYPE workhorse_bindings gauge$/gm)).toHaveLength(1);
});

/**
 * `urls` at each width: no serious or critical axe violation, nothing wider than the window, and
 * the header naming the database. Every failure is listed, not only the first.
 */
async function checkPages(page: Page, urls: readonly string[], widths: readonly number[]): Promise<string[]> {
  const failures: string[] = [];
  for (const width of widths) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    for (const url of urls) {
      await page.goto(url);
      await page.waitForLoadState("networkidle");
      if (!(await page.getByTestId("current-database").isVisible()))
        failures.push(`${url} @${width}: no database shown`);
      const axe = await seriousAxe(page);
      if (axe.length) failures.push(`${url} @${width}: axe ${axe.join(", ")}`);
      const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      if ((scroll as number) > (inner as number)) failures.push(`${url} @${width}: ${scroll} px wide > ${inner}`);
    }
  }
  return failures;
}

/** Every console page under one database, with a job (and its queue) of that database to show. */
function pagesUnder(database: string, job: { id: string; queue: string }): string[] {
  return [
    "",
    "/jobs",
    "/jobs?state=ready",
    `/jobs/${job.id}`,
    "/find",
    "/bindings",
    "/conflicts",
    "/search?path=n&value=1",
    "/enqueue",
    "/queues",
    `/queues/${encodeURIComponent(job.queue)}`,
    "/workers",
    "/run-times",
    "/dead-letters",
    "/audit",
    "/maintenance",
    "/sessions",
  ].map((p) => `/db/${database}${p}`);
}

test("every page of the first database passes axe and fits 390 px", async ({ signedIn, queue }) => {
  // The same pages, seeded the same way, as the single-database console's layout and axe specs
  // (which check them at 1280 px too; the header's database and switcher at 1280 px: the fleet test below).
  const urls = (await everyPage(signedIn, queue)).map((u) => `/db/Main${u === "/" ? "" : u}`);
  test.setTimeout(timeFor(urls));
  expect(await checkPages(signedIn, urls, [390])).toEqual([]);
});

const KIND: Record<string, string> = { Staging: "production", Archive: "read-only", Citus: "distributed" };
for (const [name, seed] of [
  ["Staging", staging],
  ["Archive", archive],
  ...(citusUrl ? ([["Citus", citus]] as const) : []),
] as const) {
  test(`every page of ${name} (${KIND[name]}) passes axe and fits 390 px`, async ({ signedIn }) => {
    const queueName = `pages-${name.toLowerCase()}-${run}`;
    const id = await seed((q) =>
      q.enqueue("pages.check", { n: 1 }, { queue: queueName, idempotency: { key: `pages-${run}`, scope: "e2e" } }),
    );
    const urls = pagesUnder(name, { id, queue: queueName });
    test.setTimeout(timeFor(urls));
    expect(await checkPages(signedIn, urls, [390])).toEqual([]);
  });
}

test("the fleet page and a stopped database's pages pass axe and fit 390 px", async ({ signedIn }) => {
  await stopGone();
  const urls = ["/fleet", "/db/Gone", "/db/Gone/jobs", "/db/Gone/find"];
  test.setTimeout(timeFor(urls) * 2);
  expect(await checkPages(signedIn, urls, [1280, 390])).toEqual([]);
});
