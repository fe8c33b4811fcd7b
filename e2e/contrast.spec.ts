import { expect, test } from "./fixtures";
import { everyPage, timeFor } from "./pages/every-page";

/**
 * WCAG 2.x AA text contrast on every page: each element with its own visible text is checked against
 * the first opaque background behind it (4.5:1, or 3:1 for large text: 24 px, or 18.66 px bold).
 */
test("text on every page meets WCAG AA contrast", async ({ signedIn, queue }) => {
  const urls = await everyPage(signedIn, queue);
  test.setTimeout(timeFor(urls));
  const failures: string[] = [];
  for (const p of urls) {
    await signedIn.goto(p);
    await signedIn.waitForLoadState("networkidle");
    const bad = await signedIn.evaluate(() => {
      // Tailwind 4 colours are oklch(); let the browser convert any CSS colour to sRGB on a canvas.
      const ctx = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
      const parse = (c: string) => {
        if (!ctx || !c || c === "transparent") return null;
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillStyle = "rgba(0, 0, 0, 0)";
        ctx.fillStyle = c;
        ctx.fillRect(0, 0, 1, 1);
        const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
        return { r: r as number, g: g as number, b: b as number, a: (a as number) / 255 };
      };
      const lum = ({ r, g, b }: { r: number; g: number; b: number }) => {
        const f = (v: number) => {
          const s = v / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      const bgOf = (el: Element | null): { r: number; g: number; b: number } => {
        for (let e = el; e; e = e.parentElement) {
          const c = parse(getComputedStyle(e).backgroundColor);
          if (c && c.a >= 0.99) return c;
        }
        return { r: 255, g: 255, b: 255 };
      };
      const out: string[] = [];
      for (const el of Array.from(document.querySelectorAll("body *"))) {
        const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && (n.textContent ?? "").trim());
        if (!own) continue;
        const st = getComputedStyle(el);
        const rect = el.getBoundingClientRect();
        if (st.visibility === "hidden" || st.display === "none" || rect.width === 0 || rect.height === 0) continue;
        if (el.closest("[disabled], .sr-only, nextjs-portal")) continue;
        const fg = parse(st.color);
        if (!fg) continue;
        const L1 = lum(fg);
        const L2 = lum(bgOf(el));
        const ratio = (Math.max(L1, L2) + 0.05) / (Math.min(L1, L2) + 0.05);
        const size = Number.parseFloat(st.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
        if (ratio < (large ? 3 : 4.5)) {
          out.push(`${el.tagName.toLowerCase()} "${(el.textContent ?? "").trim().slice(0, 40)}" ${ratio.toFixed(2)}:1`);
        }
      }
      return out;
    });
    for (const b of bad) failures.push(`${p}: ${b}`);
  }
  expect(failures).toEqual([]);
});
