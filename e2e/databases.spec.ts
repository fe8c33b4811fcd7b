import { randomBytes } from "node:crypto";
import pg from "pg";
import { Queue } from "../lib/enqueue";
import { expect, test } from "./fixtures";
import { seriousAxe } from "./pages/checks";

/**
 * The console serving several databases (scripts/e2e.mjs: "Main" is the e2e database, "Staging" a
 * production one, "Archive" a read-only one, "Gone" a port nothing listens on). Jobs are seeded
 * through the core into each real database.
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

async function jobState(pool: pg.Pool, id: string): Promise<string> {
  const { rows } = await pool.query<{ state: string }>("select state::text from workhorse.job where id = $1", [id]);
  return rows[0]?.state ?? "missing";
}

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
  expect(await res.text()).toContain("its databases are Main, Staging, Archive, Gone");
});

test("a job enqueued in one database is found by key from the find page, in that database only", async ({
  signedIn,
}) => {
  const key = `order:ORD-${run}`;
  const jobId = await staging((q) =>
    q.enqueue("order.ship", { order: run }, { queue: `orders-${run}`, idempotency: { key, scope: "checkout" } }),
  );
  await signedIn.goto("/db/Main/find");
  await signedIn.getByLabel("Scope").fill("checkout");
  await signedIn.getByLabel("Key", { exact: true }).fill(key);
  await signedIn.getByRole("button", { name: "Find", exact: true }).click();
  const everywhere = signedIn.getByRole("table", { name: "The key in every database" });
  await expect(everywhere).toBeVisible();
  await expect(signedIn.getByText("1 of 4 databases hold this key.")).toBeVisible();
  await expect(everywhere.locator("tr[data-database=Staging]")).toContainText("Found");
  await expect(everywhere.locator("tr[data-database=Main]")).toContainText("Not here");
  await expect(everywhere.locator("tr[data-database=Archive]")).toContainText("Not here");
  await expect(everywhere.locator("tr[data-database=Gone]")).toContainText("Down");
  await everywhere.getByRole("link", { name: jobId }).click();
  await expect(signedIn).toHaveURL(new RegExp(`/db/Staging/jobs/${jobId}$`));
  await expect(signedIn.getByTestId("current-database")).toContainText("Staging");
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
});

test("the fleet page shows every database, a stopped one as down, within 2 s", async ({ signedIn }) => {
  await staging((q) => q.enqueue("fleet.probe", {}, { queue: `fleet-${run}` }));
  // The server's answer (every database read, the stopped one included) comes within 2 s.
  const started = Date.now();
  const answer = await signedIn.request.get("/fleet");
  expect(Date.now() - started).toBeLessThan(2000);
  expect(answer.status()).toBe(200);
  expect(await answer.text()).toContain("ECONNREFUSED");
  const res = await signedIn.goto("/fleet");
  expect(res?.status()).toBe(200);
  const table = signedIn.getByRole("table", { name: "Databases" });
  await expect(table.locator("tr[data-database=Gone]")).toContainText("Down");
  await expect(table.locator("tr[data-database=Gone]")).toContainText("ECONNREFUSED");
  for (const name of ["Main", "Staging", "Archive"]) {
    await expect(table.locator(`tr[data-database=${name}]`)).toContainText("Up");
  }
  await expect(signedIn.getByTestId("current-database")).toHaveText("All databases");
});

test("/metrics labels every database's state with its name; a stopped one is left out", async ({ request }) => {
  const res = await request.get("/metrics", { headers: { authorization: `Bearer ${process.env.E2E_METRICS_TOKEN}` } });
  expect(res.status()).toBe(200);
  const body = await res.text();
  for (const name of ["Main", "Staging", "Archive"]) {
    expect(body).toMatch(new RegExp(`^workhorse_bindings\\{[^}]*database="${name}"[^}]*\\} `, "m"));
  }
  expect(body).not.toContain('database="Gone"');
  expect(body.match(/^# TYPE workhorse_bindings gauge$/gm)).toHaveLength(1);
});

test("the multi-database pages pass axe and fit 390 px", async ({ signedIn }) => {
  test.setTimeout(180_000);
  for (const width of [1280, 390]) {
    await signedIn.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    for (const url of ["/fleet", "/db/Staging/jobs", "/db/Archive/find", "/db/Main"]) {
      await signedIn.goto(url);
      await expect(signedIn.getByTestId("current-database")).toBeVisible();
      expect({ url, width, axe: await seriousAxe(signedIn) }).toEqual({ url, width, axe: [] });
      const [scroll, inner] = await signedIn.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      expect({ url, width, overflow: (scroll as number) > (inner as number) }).toEqual({ url, width, overflow: false });
    }
  }
});
