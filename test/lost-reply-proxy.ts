// A loopback TCP proxy in front of the test server that can lose an enqueue's reply: it forwards
// client <-> server bytes, and when armed it lets the next enqueue statement run and commit, holds
// back everything the server answers to it, and cuts the connection once the server said it is
// ready for the next query (the statement's transaction has committed by then). The client sees a
// connection lost mid-statement, as after a network cut right after the commit.
import net from "node:net";

/**
 * What a client sends for an enqueue: a call of one of the enqueue functions in the statement's
 * text, or the name of its cached plan. Not any text naming `workhorse.enqueue_…`: the observation
 * log's INSERT into `workhorse.enqueue_observation` (flushed on a timer) is no enqueue.
 */
const ENQUEUE_MARKERS = [
  "workhorse.enqueue_one(",
  "workhorse.enqueue_one_at(",
  "workhorse.enqueue_batch(",
  "workhorse_enqueue_",
].map((m) => Buffer.from(m));

export interface LostReplyProxy {
  /** The proxy's connection string for `url` (same user and database, the proxy's host and port). */
  urlFor(url: string): string;
  /**
   * Loses the reply of the next `count` enqueue statements (each cut connection counts one). After
   * the commit the reply is held back until `beforeCut` resolves (a short window can expire, another
   * producer can act), then the connection is cut.
   */
  loseNextReplies(count?: number, beforeCut?: () => unknown): void;
  /** How many replies were lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

export async function startLostReplyProxy(target: { host: string; port: number }): Promise<LostReplyProxy> {
  let armed = 0;
  let beforeCut: () => unknown = () => {};
  let lost = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    let cutting = false;
    let pending = Buffer.alloc(0); // server bytes of an unfinished message
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk: Buffer) => {
      if (!cutting && armed > 0 && ENQUEUE_MARKERS.some((m) => chunk.includes(m))) {
        armed--;
        cutting = true;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      // Server messages: a type byte and a 4-byte length (which counts itself). Whole messages are
      // forwarded; once cutting, nothing is, and ReadyForQuery ('Z') ends the connection.
      pending = Buffer.concat([pending, chunk]);
      let at = 0;
      while (pending.length - at >= 5) {
        const len = pending.readInt32BE(at + 1);
        if (pending.length - at < 1 + len) break;
        const type = String.fromCharCode(pending[at] as number);
        const message = pending.subarray(at, at + 1 + len);
        at += 1 + len;
        if (!cutting) {
          client.write(message);
        } else if (type === "Z") {
          lost++;
          pending = Buffer.alloc(0);
          Promise.resolve()
            .then(beforeCut)
            .catch(() => {})
            .then(cut);
          return;
        }
      }
      pending = pending.subarray(at);
    });
    const end = () => cut();
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on("close", () => {
      sockets.delete(upstream);
      client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    urlFor(url: string) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    loseNextReplies(count = 1, then: () => unknown = () => {}) {
      armed = count;
      beforeCut = then;
    },
    get lost() {
      return lost;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
