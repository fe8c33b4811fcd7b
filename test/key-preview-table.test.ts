// Key previews hide control and format characters by one table every client shares
// (sdk/conformance/key-preview-hidden.json), not by the runtime's Unicode version: this client's
// copy is that table, and the preview hides exactly its code points.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { KEY_PREVIEW_HIDDEN, KEY_PREVIEW_UNICODE_VERSION } from "../lib/enqueue/key-preview-table.generated";
import { keyPreviewOf } from "../lib/enqueue/keys";

const table = JSON.parse(
  readFileSync(new URL("../sdk/conformance/key-preview-hidden.json", import.meta.url), "utf8"),
) as {
  unicodeVersion: string;
  ranges: [string, string][];
};
const ranges = table.ranges.map(([a, b]) => [Number.parseInt(a, 16), Number.parseInt(b, 16)]);

/** The preview of a key whose first shown character is `cp` (9 code points: 3 are shown). */
const previewOf = (cp: number) => keyPreviewOf(`${String.fromCodePoint(cp)}bcdefghi`);

describe("the key preview table", () => {
  test("lib/enqueue/key-preview-table.generated.ts is sdk/conformance/key-preview-hidden.json", () => {
    expect(KEY_PREVIEW_UNICODE_VERSION).toBe(table.unicodeVersion);
    expect(KEY_PREVIEW_HIDDEN.map(([a, b]) => [a, b])).toEqual(ranges);
  });

  test("every client's copy is current (scripts/key-preview-table.ts --check)", () => {
    const output = execFileSync("npx", ["tsx", "scripts/key-preview-table.ts", "--check"], { encoding: "utf8" });
    expect(output).toContain("are current");
  }, 60_000);

  test("a preview hides the first and last code point of every range and shows the ones beside them", () => {
    for (const [first, last] of ranges) {
      expect(previewOf(first as number)).toBe("\uFFFDbc…");
      expect(previewOf(last as number)).toBe("\uFFFDbc…");
      if ((first as number) > 0) expect(previewOf((first as number) - 1)).not.toContain("\uFFFD");
      expect(previewOf((last as number) + 1)).not.toContain("\uFFFD");
    }
  });

  test("format characters newer than a client's runtime are hidden all the same (U+0890, U+13439, U+E0020)", () => {
    expect(keyPreviewOf("\u0890pound-mark-key")).toBe("\uFFFDpoun…");
    expect(keyPreviewOf("ab\u{13439}c\u{1343f}-hieroglyph-format-key")).toBe("ab\uFFFDc\uFFFD-hi…");
    expect(keyPreviewOf("\u{e0020}\u{e007f}tag-characters-key")).toBe("\uFFFD\uFFFDtag-…");
  });
});
