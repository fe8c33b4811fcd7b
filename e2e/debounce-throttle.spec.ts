import { expect, test } from "./fixtures";
import { KEYS, SCOPE as ORDERS_SCOPE } from "./keys";

// A scope of its own: the flows project counts the replays in the orders scope.
const SCOPE = `${ORDERS_SCOPE}-modes`;

import { EnqueuePage } from "./pages/enqueue-page";

// The enqueue form's three key modes, and what an operator reads for each outcome.

test("idempotency mode: accepted, then replayed with the same job", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const input = {
    type: "e2e.idem-mode",
    payload: '{"n": 1}',
    key: `${KEYS.order}-mode`,
    scope: SCOPE,
    mode: "idempotency" as const,
  };
  await form.fill(input);
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const id = await form.jobId();
  await form.submit();
  expect(await form.outcome()).toBe("replayed");
  expect(await form.jobId()).toBe(id);
  await expect(form.explanation()).toContainText("nothing was written");
});

test("debounce mode: accepted then replaced in place; the job page shows the binding and the replacement", async ({
  signedIn,
}) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const input = {
    type: "search.reindex",
    payload: '{"doc": 4417}',
    key: KEYS.debounce,
    scope: SCOPE,
    mode: "debounce" as const,
    windowMs: "600000",
    maxWaitMs: "900000",
  };
  await form.fill(input);
  await expect(signedIn.getByLabel("Run at", { exact: true })).toHaveCount(0);
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const id = await form.jobId();
  await form.fill({ ...input, payload: '{"doc": 4417, "title": "edited"}' });
  await form.submit();
  expect(await form.outcome()).toBe("replaced");
  expect(await form.jobId()).toBe(id);
  await expect(form.explanation()).toContainText("rewritten in place");

  await signedIn.goto(`/jobs/${id}`);
  const card = signedIn.locator("section").filter({ has: signedIn.getByRole("heading", { name: "Debounce binding" }) });
  const value = (term: string) =>
    card
      .getByRole("term")
      .filter({ hasText: new RegExp(`^${term}$`) })
      .locator("+ dd");
  await expect(value("Mode")).toHaveText("debounce");
  await expect(value("Window")).toHaveText("10m 00s");
  await expect(value("Schedule")).toHaveText(/^reset/);
  // The max-wait deadline is the first acceptance + 15 minutes (maxWaitMs 900000).
  const first = Date.parse(
    `${(await value("First acceptance").textContent())?.replace(" UTC", "Z").replace(" ", "T")}`,
  );
  const deadline = Date.parse(
    `${(await value("Max-wait deadline").textContent())?.replace(" UTC", "Z").replace(" ", "T")}`,
  );
  expect(deadline - first).toBe(900_000);
  await expect(signedIn.getByTestId("debounced-entry")).toHaveCount(1);
  await expect(signedIn.getByTestId("debounced-entry")).toContainText("replaced this job's definition");
});

test("throttle mode: accepted then coalesced into the window's job", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const input = {
    type: "order.shipped",
    payload: '{"order": "ORD-5120"}',
    key: KEYS.throttle,
    scope: SCOPE,
    mode: "throttle" as const,
    windowMs: "60000",
  };
  await form.fill(input);
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  const id = await form.jobId();
  await form.submit();
  expect(await form.outcome()).toBe("coalesced");
  expect(await form.jobId()).toBe(id);
  await expect(form.explanation()).toContainText("window's job");
});

test("a non_replaceable debounce is explained: what happened and what to do", async ({ signedIn, queue }) => {
  // The key is held by idempotency, so a debounce request cannot replace its job.
  await queue.enqueue("e2e.held", {}, { idempotency: { key: KEYS.heldByIdempotency, scope: SCOPE } });
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({
    type: "e2e.held",
    payload: "{}",
    key: KEYS.heldByIdempotency,
    scope: SCOPE,
    mode: "debounce",
    windowMs: "60000",
  });
  await form.submit();
  expect(await form.outcome()).toBe("non_replaceable");
  await expect(form.result.getByText("incompatible_key_mode")).toBeVisible();
  // The key's mode is named, not only the mode this request asked for.
  await expect(
    form.result
      .getByRole("term")
      .filter({ hasText: /^Mode$/ })
      .locator("+ dd"),
  ).toHaveText("idempotency (the key's; this request asked for debounce)");
  await expect(form.explanation()).toContainText("Not replaced: key held in another mode.");
  await expect(form.explanation()).toContainText("The key is held by an idempotency request, so a debounce request");
  await expect(form.explanation()).toContainText("What to do:");

  // The same decision on Conflicts & replays, with its reason in words.
  await signedIn.goto(`/conflicts?outcome=non_replaceable&scope=${encodeURIComponent(SCOPE)}`);
  await expect(signedIn.getByTestId("observation-reason").first()).toContainText("key held in another mode");
  // What window_elapsed_pending means is explained on the page.
  const help = signedIn.getByTestId("reason-help");
  await help.getByText("Why a debounce request is non_replaceable").click();
  await expect(help).toContainText("window_elapsed_pending");
  await expect(help).toContainText("has not started yet");
});

test("form errors are messages in the mode's words, never a crash", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "x", payload: "{}", key: "", mode: "throttle", windowMs: "60000" });
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(signedIn.getByText("Throttle key is required: throttle works on a key")).toBeVisible();
  await form.fill({ type: "x", payload: "{}", key: "k-e2e-1", mode: "debounce", windowMs: "5000", maxWaitMs: "10" });
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(signedIn.getByText("Max wait must be at least windowMs (5000)")).toBeVisible();
});
