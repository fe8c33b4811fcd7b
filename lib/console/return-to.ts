/**
 * Where sign-in returns to. Only a path on this console is accepted: it must start with a single
 * "/" (so never "//evil.example" or "/\evil.example", which browsers treat as another host), hold no
 * control characters or backslashes, resolve to this origin, and not be the sign-in page itself.
 * Anything else means "/". Shared by the sign-in page, its action and the redirect to it.
 */
export function safeReturnPath(raw: unknown): string | null {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2000) return null;
  if (!raw.startsWith("/") || raw.startsWith("//") || /[\\\p{Cc}]/u.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw, "http://console.invalid");
  } catch {
    return null;
  }
  if (url.origin !== "http://console.invalid") return null;
  if (url.pathname === "/sign-in" || url.pathname.startsWith("/api/")) return null;
  return `${url.pathname}${url.search}`;
}

/** The sign-in page, coming back to `returnTo` (when it is a safe path other than "/"). */
export function signInHref(returnTo: string | null | undefined): string {
  const safe = safeReturnPath(returnTo);
  return safe && safe !== "/" ? `/sign-in?next=${encodeURIComponent(safe)}` : "/sign-in";
}
