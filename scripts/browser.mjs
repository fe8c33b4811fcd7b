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
import path from "node:path";
import { aptInstall, currentUid, executable, installPlan } from "./system-tools.mjs";

export const DEBIAN_CHROMIUM = "/usr/bin/chromium";

export class BrowserMissingError extends Error {}

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
  const plan = installPlan({
    binaries: [DEBIAN_CHROMIUM],
    optOut: "WORKHORSE_BROWSER_INSTALL",
    env,
    uid: currentUid(),
  });
  if (plan === "present") return DEBIAN_CHROMIUM;
  if (plan !== "install") {
    throw new BrowserMissingError(
      `The browser tests need Chromium and there is none at ${DEBIAN_CHROMIUM}${
        plan === "no-apt" ? " (and no apt-get to install it)" : ""
      }: install it (\`sudo apt-get install chromium\` on Debian) or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  const logFile = path.join(logDir, "apt-chromium.log");
  log(`no browser at ${DEBIAN_CHROMIUM}: installing Debian's chromium (apt-get install chromium; log ${logFile})`);
  if (!aptInstall({ pkg: "chromium", env, logFile }) || !executable(DEBIAN_CHROMIUM)) {
    throw new BrowserMissingError(
      `Installing Debian's chromium failed (see ${logFile}): install it yourself, or set CHROMIUM_PATH to a Chromium binary.`,
    );
  }
  return DEBIAN_CHROMIUM;
}
