/**
 * The console's GET /metrics on the real Next.js server (docs/observability.md): no session, the
 * bearer token only; Prometheus text with the state gauges; off on a console without a token.
 */
import { expect, test } from "./fixtures";

const token = process.env.E2E_METRICS_TOKEN ?? "";
const readonlyURL = process.env.E2E_READONLY_URL ?? "http://127.0.0.1:3101";

test("without the bearer token: 401 and a WWW-Authenticate challenge, no session asked for", async ({ request }) => {
  const cases: Record<string, string>[] = [
    {},
    { authorization: "Bearer wrong-token-0123456789abcdef" },
    { authorization: `Basic ${token}` },
  ];
  for (const headers of cases) {
    const res = await request.get("/metrics", { headers, maxRedirects: 0 });
    expect(res.status()).toBe(401);
    expect(res.headers()["www-authenticate"]).toMatch(/^Bearer/);
    expect(await res.text()).not.toContain("workhorse_");
  }
});

test("with the token and no session: Prometheus text with the state gauges", async ({ request, queue }) => {
  const name = `metrics-e2e-${Date.now()}`;
  await queue.enqueue("metrics.check", {}, { queue: name });
  await queue.enqueue("metrics.check", {}, { queue: name });
  const res = await request.get("/metrics", { headers: { authorization: `Bearer ${token}` }, maxRedirects: 0 });
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  const body = await res.text();
  expect(body).toMatch(
    new RegExp(
      `^workhorse_queue_depth\\{[^}]*messaging_destination_name="${name}"[^}]*workhorse_job_state="ready"[^}]*\\} 2$`,
      "m",
    ),
  );
  expect(body).toMatch(/^workhorse_bindings\{workhorse_binding_state="live"/m);
});

test("a console without WORKHORSE_METRICS_TOKEN answers 404", async ({ request }) => {
  const res = await request.get(`${readonlyURL}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status()).toBe(404);
});

test("a queue that empties leaves /metrics, and every producer's decisions are counted from the database", async ({
  request,
  queue,
}) => {
  test.setTimeout(180_000);
  const scrape = async () => {
    const res = await request.get("/metrics", { headers: { authorization: `Bearer ${token}` }, maxRedirects: 0 });
    expect(res.status()).toBe(200);
    return res.text();
  };
  await scrape(); // the console counts decisions from its first read on
  const name = `metrics-gone-${Date.now()}`;
  await queue.enqueue("metrics.check", { n: 1 }, { queue: name, idempotency: { key: `${name}-k` } });
  await queue.enqueue("metrics.check", { n: 1 }, { queue: name, idempotency: { key: `${name}-k` } });
  await queue.enqueue("metrics.check", { n: 2 }, { queue: name });
  const line = (metric: string, labels: string) =>
    new RegExp(`^${metric}\\{[^}]*messaging_destination_name="${name}"[^}]*${labels}[^}]*\\} (\\S+)$`, "m");
  const value = (body: string, re: RegExp) => Number(re.exec(body)?.[1] ?? Number.NaN);
  const depth = line("workhorse_queue_depth", 'workhorse_job_state="ready"');
  await expect.poll(async () => value(await scrape(), depth), { timeout: 60_000, intervals: [1000] }).toBe(2);
  // The fixture's Queue is another process as far as the console goes: its decisions come from the database.
  const accepted = line("workhorse_queue_decisions_total", 'workhorse_enqueue_outcome="accepted"');
  const replayed = line("workhorse_queue_decisions_total", 'workhorse_enqueue_outcome="replayed"');
  await expect
    .poll(
      async () => {
        const body = await scrape();
        return [value(body, accepted), value(body, replayed)];
      },
      { timeout: 90_000, intervals: [1000] },
    )
    .toEqual([2, 1]);
  await queue.purgeQueue(name, { actor: "e2e", reason: "empty the queue" });
  const anyOfQueue = new RegExp(`^workhorse_queue_(depth|lag|dead_letters|workers|paused)\\{[^}]*"${name}"`, "m");
  await expect.poll(async () => anyOfQueue.test(await scrape()), { timeout: 90_000, intervals: [1000] }).toBe(false);
});
