// Waiting for a server a script started (e2e.mjs, start.ts).

/**
 * Polls `url` every `pollMs` until it answers with any status (true), or `child` exits or `ms`
 * pass (false). Redirects are not followed: a redirect is an answer.
 */
export async function waitForHttp(url, child, ms, pollMs) {
  const until = Date.now() + ms;
  while (Date.now() < until && child.exitCode === null) {
    try {
      const res = await fetch(url, { redirect: "manual" });
      if (res.status > 0) return true;
    } catch {}
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return false;
}
