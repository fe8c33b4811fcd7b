// `npm test` installs the Debian packages its tests need (scripts/system-tools.mjs): the decision,
// and the real apt-get path on this machine (prometheus for the /metrics and alert-rule tests).
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";
import {
  aptInstall,
  currentUid,
  ensurePrometheus,
  executable,
  installPlan,
  PROMETHEUS_BINARIES,
} from "../scripts/system-tools.mjs";

const root = path.join(import.meta.dirname, "..");
const bins = ["/usr/bin/a", "/usr/bin/b"];

test("a package is installed only when a binary is missing, as root, with apt-get and no opt-out", () => {
  const plan = (o: { have?: string[]; env?: Record<string, string>; uid?: number | null; apt?: boolean }) =>
    installPlan({
      binaries: bins,
      optOut: "WORKHORSE_X_INSTALL",
      env: o.env ?? {},
      uid: o.uid === undefined ? 0 : o.uid,
      isExecutable: (f) => (o.have ?? []).includes(f),
      hasAptGet: () => o.apt ?? true,
    });
  expect(plan({ have: bins })).toBe("present");
  expect(plan({ have: bins, uid: 1000, env: { WORKHORSE_X_INSTALL: "0" } })).toBe("present");
  expect(plan({ have: ["/usr/bin/a"] })).toBe("install");
  expect(plan({})).toBe("install");
  expect(plan({ env: { WORKHORSE_X_INSTALL: "1" } })).toBe("install");
  expect(plan({ env: { WORKHORSE_X_INSTALL: "0" } })).toBe("refused");
  expect(plan({ uid: 1000 })).toBe("refused");
  expect(plan({ uid: null })).toBe("refused");
  expect(plan({ apt: false })).toBe("no-apt");
});

test("the vitest global setup makes sure prometheus is there before any test file runs", () => {
  // What the /metrics scrape and the alert-rule tests need is present by the time they run.
  for (const b of PROMETHEUS_BINARIES) expect(executable(b), b).toBe(true);
  const logs: string[] = [];
  expect(ensurePrometheus({ logDir: path.join(root, "test-results"), log: (l) => logs.push(l) })).toEqual({
    installed: false,
    problem: null,
  });
  expect(logs).toEqual([]);
  expect(readFileSync(path.join(root, "test", "global-setup.ts"), "utf8")).toMatch(/ensurePrometheus\(/);
});

test("the real install path: apt-get update and apt-get install prometheus succeed as root", () => {
  expect(currentUid(), "the install path runs as root (as npm test does in CI)").toBe(0);
  const logFile = path.join(root, "test-results", "apt-prometheus-test.log");
  expect(aptInstall({ pkg: "prometheus", logFile })).toBe(true);
  expect(readFileSync(logFile, "utf8")).toMatch(/prometheus/);
  for (const b of PROMETHEUS_BINARIES) expect(executable(b), b).toBe(true);
}, 300_000);
