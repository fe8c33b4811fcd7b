import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";

// Small defects an operator trips over; each test failed before its fix.

const tag = () => randomBytes(4).toString("hex");

test("a 1 MiB payload is sent once, as a preview with a download; the live refresh carries none of it", async ({
  signedIn,
  queue,
  browser,
}) => {
  const blob = "z".repeat(1_000_000);
  const id = await queue.enqueue(`e2e.big.${tag()}`, { orderId: "ORD-77", blob }, { queue: "e2e-big" });
  const page = await signedIn.goto(`/jobs/${id}`);
  const html = (await page?.text()) ?? "";
  expect(html.length).toBeLessThan(200_000);
  await expect(signedIn.getByTestId("payload-truncated")).toContainText("Showing the first 16.0 KiB of 976.6 KiB");
  await expect(signedIn.getByText(/"orderId": "ORD-77"/)).toBeVisible();

  const live = await signedIn.request.get(`/api/jobs/${id}`);
  expect(live.status()).toBe(200);
  const body = await live.text();
  expect(body.length).toBeLessThan(10_000);
  expect(body.includes("zzzz")).toBe(false);

  const link = signedIn.getByRole("link", { name: /^Download the payload \(JSON, 976\.6 KiB\)$/ });
  const download = await signedIn.request.get((await link.getAttribute("href")) as string);
  expect(download.status()).toBe(200);
  expect(download.headers()["content-disposition"]).toBe(`attachment; filename="job-${id}-payload.json"`);
  expect(JSON.parse(await download.text())).toEqual({ orderId: "ORD-77", blob });

  // Signed out, the download is refused.
  const anonymous = await browser.newContext();
  const refused = await anonymous.request.get(`${new URL(signedIn.url()).origin}/api/jobs/${id}/payload`);
  expect(refused.status()).toBe(401);
  await anonymous.close();
});
