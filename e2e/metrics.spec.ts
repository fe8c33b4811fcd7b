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
