import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";
import { seriousAxe, wideTables } from "./pages/checks";

const tag = randomBytes(3).toString("hex").toUpperCase();

test("support finds jobs by a payload field and type, newest first, at 1280 and 390 px", async ({
  signedIn,
  queue,
}) => {
  const order = `ORD-${tag}`;
  const placed = await queue.enqueue("order.place", { orderId: order, total: 12 }, { queue: "e2e-search" });
  await queue.enqueue("order.place", { orderId: `${order}-other` }, { queue: "e2e-search" });
  const refund = await queue.enqueue(
    "order.refund",
    { orderId: order, customer: { email: `${tag}@example.com` } },
    { queue: "e2e-search" },
  );

  for (const width of [1280, 390]) {
    await signedIn.setViewportSize({ width, height: 844 });
    await signedIn.goto("/search");
    await signedIn.getByLabel("Payload field").fill("orderId");
    await signedIn.getByLabel("Equals").fill(order);
    await signedIn.getByRole("button", { name: "Search", exact: true }).click();
    await expect(signedIn).toHaveURL(/\/search\?path=orderId&value=ORD-/);
    const table = signedIn.getByRole("table", { name: "Jobs whose payload matches, newest first" });
    const rows = table.locator("tbody tr");
    await expect(rows).toHaveCount(2);
    await expect(rows.nth(0).getByRole("link", { name: new RegExp(refund.slice(-8)) })).toBeVisible();
    await expect(rows.nth(1).getByRole("link", { name: new RegExp(placed.slice(-8)) })).toBeVisible();
    await expect(signedIn.getByRole("status")).toContainText("2 matches among");
    expect(await wideTables(signedIn)).toEqual([]);
    for (const scheme of ["light", "dark"] as const) {
      await signedIn.emulateMedia({ colorScheme: scheme });
      expect(await seriousAxe(signedIn)).toEqual([]);
    }
  }

  // By type, and by a nested field.
  await signedIn.goto(`/search?path=orderId&value=${order}&type=order.place`);
  await expect(signedIn.locator("tbody tr")).toHaveCount(1);
  await signedIn.goto(`/search?path=customer.email&value=${tag}@example.com`);
  await expect(signedIn.locator("tbody tr")).toHaveCount(1);
  // A path that is not one says what to type.
  await signedIn.goto("/search?path=a..b&value=x");
  await expect(
    signedIn.getByText("The path has an empty segment (two dots in a row, or a dot at the start or end)"),
  ).toBeVisible();
  await signedIn.goto(`/search?path=orderId&value=ORD-NONE-${tag}`);
  await expect(signedIn.getByText("No job matches.")).toBeVisible();
});
