/**
 * CPU time for the bench's split of each request's cost: this process's (`process.cpuUsage()`,
 * user + system, every thread) and the server's, read from `/proc/<pid>/stat` for every process on
 * this machine whose name starts with the server's (`postgres` for PostgreSQL's backends, WAL
 * writer and checkpointer; `redis-server`). USER_HZ is 100 on Linux, so a server reading has 10 ms
 * resolution: the bench sums it over every segment of a scenario before dividing.
 */
import { readdirSync, readFileSync } from "node:fs";

/** CPU of this process since it started, in µs (user + system). */
export function clientCpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/**
 * CPU of every process named `name*` on this machine, in µs (utime + stime), or null when none runs
 * here (a server behind DATABASE_URL on another host: its CPU cannot be read).
 */
export function serverCpuUs(name: "postgres" | "redis-server"): number | null {
  let ticks = 0;
  let found = false;
  let pids: string[];
  try {
    pids = readdirSync("/proc");
  } catch {
    return null;
  }
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, "utf8").startsWith(name)) continue;
      const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
      found = true;
    } catch {
      // the process ended while we read it
    }
  }
  return found ? ticks * 10_000 : null;
}
