import pg from "pg";
import { OneShotTimer } from "../enqueue/one-shot-timer";
import { listenForWakes, WAKE_CHANNEL } from "../store/wake";

/** The dedicated LISTEN connection, reconnected with backoff; `onReconnect` covers notifications missed meanwhile. */
export class Listener {
  private client: pg.Client | null = null;
  private stopped = false;
  private readonly retryTimer = new OneShotTimer(() => void this.connect());
  private backoff = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly onWake: (queue: string) => void,
    private readonly onReconnect: () => void,
    private readonly onError: (err: Error) => void,
  ) {}

  start(): void {
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client(this.pool.options);
    this.client = client;
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (err && !this.stopped) this.onError(new Error(`LISTEN connection lost: ${err.message}`, { cause: err }));
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on("error", (err) => onLost(err));
    client.on("end", () => onLost());
    client.on("notification", (msg) => {
      if (msg.channel === WAKE_CHANNEL && msg.payload) this.onWake(msg.payload);
    });
    try {
      await client.connect();
      await listenForWakes(client);
      this.backoff = 0;
      this.onReconnect();
    } catch (err) {
      onLost(err as Error);
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer.pending) return;
    this.backoff = Math.min(this.backoff ? this.backoff * 2 : 100, 5000);
    this.retryTimer.start(this.backoff);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.retryTimer.cancel();
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}
