/**
 * Where sign-in returns to. Only a path on this console is accepted. The value is resolved against
 * this origin first (dot segments, `%2e`, tabs and newlines are what a browser would remove), and it
 * is the resolved path that must pass, both as it is and percent-decoded: one leading "/" (so never
 * "//evil.example" or "/\evil.example", which browsers treat as another host), no "//" anywhere, no
 * backslash, no control character, no dot segment, valid percent-encoding, and not the sign-in page
 * or an API route. Anything else means "/". Shared by the sign-in page, its action and the redirect
 * to it.
 */
export function safeReturnPath(raw: unknown): string | null {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2000) return null;
  if (!isLocalPath(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw, "http://console.invalid");
  } catch {
    return null;
  }
  if (url.origin !== "http://console.invalid") return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(url.pathname);
  } catch {
    return null;
  }
  // The result is checked, not only the input: "/.//evil.example" resolves to "//evil.example".
  if (!isLocalPath(url.pathname) || !isLocalPath(decoded)) return null;
  for (const p of [url.pathname, decoded]) {
    const lower = p.toLowerCase();
    if (lower === "/sign-in" || lower.startsWith("/sign-in/") || lower === "/api" || lower.startsWith("/api/")) {
      return null;
    }
  }
  return `${url.pathname}${url.search}`;
}

/** No backslash or control character; a path of one leading slash, no empty or dot segment. */
function isLocalPath(p: string): boolean {
  if (/[\\\p{Cc}]/u.test(p)) return false;
  const path = p.split(/[?#]/, 1)[0] ?? "";
  return path.startsWith("/") && !path.includes("//") && !path.split("/").some((s) => s === "." || s === "..");
}

/** The sign-in page, coming back to `returnTo` (when it is a safe path other than "/"). */
export function signInHref(returnTo: string | null | undefined): string {
  const safe = safeReturnPath(returnTo);
  return safe && safe !== "/" ? `/sign-in?next=${encodeURIComponent(safe)}` : "/sign-in";
}
