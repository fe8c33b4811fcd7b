/**
 * The console's HTTP server (run by scripts/start.ts; not meant to be started by hand): Next.js
 * behind a plain Node server that decides, from the socket, who is asking and through which
 * origin, before Next.js sees the request (lib/console/auth/request-info.ts). `next start` would instead
 * believe any client's `X-Forwarded-*` headers.
 *
 * Arguments: `--dev` for development mode. Environment: HOST, PORT, WORKHORSE_TRUSTED_PROXY, and
 * what the app reads (DATABASE_URL, WORKHORSE_*).
 */
import http from "node:http";
import path from "node:path";
import type { TLSSocket } from "node:tls";
import next from "next";
import { sanitizeRequestHeaders, trustedProxies } from "../lib/console/auth/request-info";

const root = path.resolve(import.meta.dirname, "..");
const dev = process.argv.includes("--dev");
const host = process.env.HOST || "127.0.0.1";
const port = Number(process.env.PORT || 3000);
const trusted = trustedProxies();

// Next.js names a loopback host "localhost" in the URLs its proxy sees (127.0.0.1, [::1]); its own
// base URL must say the same, or proxy.ts's rewrites (`/db/<name>/…`) count as another origin.
const loopback = /^(?:127(?:\.\d{1,3}){3}|::1|\[::1\]|localhost)$/.test(host);
const app = next({ dev, dir: root, hostname: loopback ? "localhost" : host, port });
await app.prepare();
const handle = app.getRequestHandler();

const server = http.createServer((req, res) => {
  sanitizeRequestHeaders(
    req.headers,
    req.socket.remoteAddress,
    (req.socket as Partial<TLSSocket>).encrypted === true,
    trusted,
  );
  handle(req, res).catch(() => {
    if (!res.headersSent) res.statusCode = 500;
    res.end();
  });
});
server.listen(port, host, () => {
  process.stdout.write(`[workhorse] web server listening on ${host}:${port}${dev ? " (development)" : ""}\n`);
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
