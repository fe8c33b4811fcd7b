/**
 * The browser for the Playwright tests (`npm run test:e2e`, and so `npm test`): Debian's Chromium.
 *
 * - `CHROMIUM_PATH` set: that binary, which must exist.
 * - Otherwise `/usr/bin/chromium`. When it is missing and this process may install it (root, with
 *   apt-get, and `WORKHORSE_BROWSER_INSTALL` is not `0`), it runs `apt-get install chromium` once,
 *   saying so in one line, with apt's output in `test-results/e2e-logs/apt-chromium.log`.
 *
 * Anything else ends with one sentence saying what to do (a `BrowserMissingError`), before any
 * server is started. Playwright's own browser download is not used: it needs hosts this project's
 * machines cannot reach.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, openSync } from "node:fs";
import path from "node:path";

export const DEBIAN_CHROMIUM = "/usr/bin/chromium";

export class BrowserMissingError extends Error {}

function executable(file) {
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
 * Returns the path of a Chromium to run, installing Debian's when it may (see above).
 * @param {{ env?: NodeJS.ProcessEnv, logDir: string, log: (line: string) => void }} options
 * @returns {string}
 * @throws {BrowserMissingError} no browser, and none could be installed
 */
export function ensureChromium({ env = process.env, logDir, log }) {
  if (env.CHROMIUM_PATH) {
    if (executable(env.CHROMIUM_PATH)) return env.CHROMIUM_PATH;
    throw new BrowserMissingError(
      `CHROMIUM_PATH is ${env.CHROMIUM_PATH}, which is not an executable file: point it at a Chromium binary, or unset it to use Debian's ${DEBIAN_CHROMIUM}.`,
    );
  }
  if (executable(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM;
  const may = env.WORKHORSE_BROWSER_INSTALL !== "0" && typeof process.getuid === "function" && process.getuid() === 0;
  if (!may || !onPath("apt-get")) {
    throw new BrowserMissingError(
      `The browser tests need Chromium and there is none at ${DEBIAN_CHROMIUM}${
        may ? " (and no apt-get to install it)" : ""
      }: install it (\`sudo apt-get install chromium\` on Debian) or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, "apt-chromium.log");
  log(`no browser at ${DEBIAN_CHROMIUM}: installing Debian's chromium (apt-get install chromium; log ${logFile})`);
  const fd = openSync(logFile, "w");
  const apt = (args) =>
    spawnSync("apt-get", args, {
      stdio: ["ignore", fd, fd],
      env: { ...env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  if (!(apt(["update", "-q"]) && apt(["install", "-y", "-q", "chromium"])) || !executable(DEBIAN_CHROMIUM)) {
    throw new BrowserMissingError(
      `Installing Debian's chromium failed (see ${logFile}): install it yourself, or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  return DEBIAN_CHROMIUM;
}
