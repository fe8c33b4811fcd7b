// The shipped Prometheus alert rules: `promtool check rules` and `promtool test rules` (Debian's
// prometheus package), every alert tested and documented, and every metric they read one that
// Workhorse exports.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { DECISION_COUNTS, STATE_GAUGES, TELEMETRY_METRICS } from "../lib/enqueue";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
const DIR = path.join(ROOT, "ops", "prometheus");
const RULES = path.join(DIR, "workhorse-alerts.yml");
const TESTS = path.join(DIR, "workhorse-alerts.test.yml");
const PROMTOOL = "/usr/bin/promtool";

const alerts = [...readFileSync(RULES, "utf8").matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1] as string);

test("promtool check rules accepts the rule file", async () => {
  expect(
    existsSync(PROMTOOL),
    "Debian's prometheus package (the vitest global setup installs it as root: scripts/system-tools.mjs)",
  ).toBe(true);
  const { stdout } = await run(PROMTOOL, ["check", "rules", RULES]);
  expect(stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
});

test("promtool test rules: every alert fires on its traffic and stays quiet beside it", async () => {
  const { stdout } = await run(PROMTOOL, ["test", "rules", TESTS], { cwd: DIR });
  expect(stdout).toContain("SUCCESS");
});

test("every alert has a firing test case and a section in docs/observability.md", () => {
  expect(alerts).toHaveLength(6);
  const tests = readFileSync(TESTS, "utf8");
  const docs = readFileSync(path.join(ROOT, "docs", "observability.md"), "utf8");
  for (const a of alerts) {
    expect(tests, a).toMatch(new RegExp(`alertname: ${a}\\n\\s+exp_alerts:\\n\\s+- exp_labels`));
    expect(tests, a).toMatch(new RegExp(`alertname: ${a}\\n\\s+exp_alerts: \\[\\]`));
    expect(docs, a).toContain(`### ${a}`);
  }
});

test("the conflict-rate alert reads the decisions the console counts from the database, so its scrape alone fires it", () => {
  const rule = readFileSync(RULES, "utf8").split("- alert: ")[1] ?? "";
  expect(rule).toMatch(/^WorkhorseConflictRateHigh\n/);
  expect(rule).toContain("workhorse_queue_decisions_total");
  expect(rule).not.toContain("workhorse_enqueue_decisions_total");
});

test("the rules read only metrics Workhorse exports (Prometheus names)", () => {
  const prom = (name: string) => name.replaceAll(".", "_");
  const exported = new Set([
    ...Object.values(STATE_GAUGES).map((g) => prom(g.name)),
    ...Object.values(TELEMETRY_METRICS).map((m) => `${prom(m)}_total`),
    `${prom(DECISION_COUNTS.name)}_total`,
  ]);
  const used = new Set(
    [...readFileSync(RULES, "utf8").matchAll(/\b(workhorse_[a-z_]+)\b(?=[{[)\s])/g)].map((m) => m[1]),
  );
  expect(used.size).toBeGreaterThan(4);
  for (const name of used) expect(exported, name).toContain(name);
});
