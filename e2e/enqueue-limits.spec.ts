import { expect } from "@playwright/test";
import { test } from "./fixtures";
import { EnqueuePage } from "./pages/enqueue-page";

// Payload sizes around the core's 1 MiB limit and the console's request-body limit: never a server
// error page, always a message in the form, and what the operator typed stays in the form.
const payloadOf = (bytes: number) => {
  const frame = '{"blob":""}';
  return `{"blob":"${"x".repeat(bytes - frame.length)}"}`;
};

test("a payload just under the 1 MiB limit (the form body is over Next.js's default 1 MiB) is accepted", async ({
  signedIn,
}) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "limits.under", queue: "limits", payload: payloadOf(1_048_000) });
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
});

test("a payload over 1 MiB shows the core's size rule under the field and keeps the text", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const payload = payloadOf(1_100_000);
  await form.fill({ type: "limits.over", queue: "limits", payload });
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(
    signedIn.getByText(/at most 1048576 bytes as PostgreSQL stores it \(jsonb text; this one is larger\)/),
  ).toBeVisible();
  expect((await signedIn.getByLabel("Payload (JSON)", { exact: true }).inputValue()).length).toBe(payload.length);
  await expect(signedIn.getByRole("heading", { name: /went wrong|could not be read/i })).toHaveCount(0);
});

test("a payload too large to send is refused in the form, before any request", async ({ signedIn }) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  const payload = payloadOf(4_000_000);
  await form.fill({ type: "limits.huge", queue: "limits", payload });
  let posted = 0;
  signedIn.on("request", (r) => {
    if (r.method() === "POST") posted++;
  });
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(signedIn.getByText(/Payload too large: 4,000,000 bytes/)).toBeVisible();
  expect(posted).toBe(0);
  expect((await signedIn.getByLabel("Payload (JSON)", { exact: true }).inputValue()).length).toBe(payload.length);
});

test("a refused submit replaces the earlier result: no stale 'accepted' beside a payload refusal", async ({
  signedIn,
}) => {
  const form = new EnqueuePage(signedIn);
  await form.goto();
  await form.fill({ type: "limits.first", queue: "limits", payload: "{}" });
  await form.submit();
  expect(await form.outcome()).toBe("accepted");
  await signedIn.getByLabel("Payload (JSON)", { exact: true }).fill(payloadOf(4_000_000));
  await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
  await expect(signedIn.getByText(/Payload too large: 4,000,000 bytes/).first()).toBeVisible();
  await expect(form.result.getByTestId("enqueue-result")).toHaveCount(0);
  await expect(form.result).not.toContainText("accepted");
  await expect(form.result.getByRole("alert")).toHaveText(
    "Not sent: the payload is too large (see the Payload field). Nothing was enqueued by this submit.",
  );
});

// Inputs the form passes on and the core refuses (its input rules): each is a message under its
// field, never the error page.
for (const [what, input, field, rule] of [
  ["a key over 512 bytes", { key: "k".repeat(513) }, "Idempotency key", /Idempotency key must be 1\.\.512 UTF-8 bytes/],
  ["a scope over 256 bytes", { key: "k-1", scope: "s".repeat(300) }, "Scope", /Scope .*256/],
  ["a queue name over 128 characters", { queue: "q".repeat(200) }, "Queue", /Queue .*128/],
] as const) {
  test(`${what} is refused under its field, not with an error page`, async ({ signedIn }) => {
    const form = new EnqueuePage(signedIn);
    await form.goto();
    await form.fill({ type: "limits.rules", queue: "limits", ...input });
    await signedIn.getByRole("button", { name: "Enqueue", exact: true }).click();
    await expect(signedIn.getByText(rule).first()).toBeVisible();
    await expect(signedIn.getByLabel(field, { exact: true })).toHaveAttribute("aria-invalid", "true");
    await expect(signedIn.getByRole("heading", { name: /went wrong|could not be (read|loaded)/i })).toHaveCount(0);
  });
}
