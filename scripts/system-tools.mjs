/**
 * Debian packages the tests need, installed by `npm test` itself when missing (README, "Tests"):
 * Chromium for the browser tests (scripts/browser.mjs) and Prometheus (`prometheus`, `promtool`)
 * for the `/metrics` scrape test and the alert-rule tests (test/global-setup.ts, before vitest
 * starts any test file).
 *
 * A package is installed only when one of its binaries is missing, this process runs as root,
 * `apt-get` is on PATH and the package's opt-out variable is not `0`; it says so in one line and
 * keeps apt's output in a log file. Otherwise the caller gets one sentence saying what to do.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, openSync } from "node:fs";
import path from "node:path";

/** Whether `file` exists and may be executed by this process. */
export function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

/**
 * What to do about a package: `"present"` (every binary is there), `"install"` (one is missing and
 * this process may install it), `"refused"` (missing, and the opt-out variable is `0` or this is not
 * root), `"no-apt"` (missing, may install, but there is no apt-get).
 * @param {{ binaries: string[], optOut: string, env: Record<string, string | undefined>, uid: number | null,
 *   isExecutable?: (file: string) => boolean, hasAptGet?: () => boolean }} input
 * @returns {"present" | "install" | "refused" | "no-apt"}
 */
export function installPlan({
  binaries,
  optOut,
  env,
  uid,
  isExecutable = executable,
  hasAptGet = () => onPath("apt-get"),
}) {
  if (binaries.every((b) => isExecutable(b))) return "present";
  if (env[optOut] === "0" || uid !== 0) return "refused";
  return hasAptGet() ? "install" : "no-apt";
}

/** This process's user id (null where the platform has none). */
export function currentUid() {
  return typeof process.getuid === "function" ? process.getuid() : null;
}

/**
 * Runs `apt-get update` and `apt-get install -y <pkg>` (non-interactive), apt's output in `logFile`.
 * @param {{ pkg: string, env?: NodeJS.ProcessEnv, logFile: string }} options
 * @returns {boolean} whether both succeeded
 */
export function aptInstall({ pkg, env = process.env, logFile }) {
  mkdirSync(path.dirname(logFile), { recursive: true });
  const fd = openSync(logFile, "w");
  const apt = (args) =>
    spawnSync("apt-get", args, {
      stdio: ["ignore", fd, fd],
      env: { ...env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  return apt(["update", "-q"]) && apt(["install", "-y", "-q", pkg]);
}

export const PROMETHEUS_BINARIES = ["/usr/bin/prometheus", "/usr/bin/promtool"];

/**
 * Makes sure Debian's `prometheus` package is installed (`/usr/bin/prometheus` and
 * `/usr/bin/promtool`), installing it when it may (see above; `WORKHORSE_PROMETHEUS_INSTALL=0`
 * forbids it).
 * @param {{ env?: NodeJS.ProcessEnv, logDir: string, log: (line: string) => void }} options
 * @returns {{ installed: boolean, problem: string | null }} `installed`: this call installed it;
 *   `problem`: a sentence saying what to do when it is still missing
 */
export function ensurePrometheus({ env = process.env, logDir, log }) {
  const binaries = PROMETHEUS_BINARIES;
  const plan = installPlan({ binaries, optOut: "WORKHORSE_PROMETHEUS_INSTALL", env, uid: currentUid() });
  if (plan === "present") return { installed: false, problem: null };
  const missing = binaries.filter((b) => !executable(b)).join(" and ");
  const todo = "install it (`sudo apt-get install prometheus` on Debian)";
  if (plan !== "install") {
    const why = plan === "no-apt" ? " (and there is no apt-get to install it)" : "";
    return {
      installed: false,
      problem: `The metrics tests need Debian's prometheus and ${missing} is missing${why}: ${todo}.`,
    };
  }
  const logFile = path.join(logDir, "apt-prometheus.log");
  log(`no ${missing}: installing Debian's prometheus (apt-get install prometheus; log ${logFile})`);
  if (!aptInstall({ pkg: "prometheus", env, logFile }) || !binaries.every((b) => executable(b))) {
    return { installed: false, problem: `Installing Debian's prometheus failed (see ${logFile}): ${todo}.` };
  }
  return { installed: true, problem: null };
}
