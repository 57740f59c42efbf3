import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { pgDriver } from './pg-driver.ts';

/**
 * A signal between the processes that share a PostgreSQL store: `NOTIFY` on one channel, heard by
 * every process `LISTEN`ing on it. The job queue uses it so that a job an api process enqueues
 * wakes an idle worker process at once, instead of at its next poll (100 ms): without it, every
 * job of a split deployment (`ROLE=api` and `ROLE=worker`) waited half a poll on average.
 *
 * A signal carries no data and may be lost (a listener reconnecting, a failed `NOTIFY`): it only
 * says "look now", and the poll still finds whatever a lost signal announced. So sending is fire
 * and forget, and coalesced: one `NOTIFY` in flight per process, and the sends made meanwhile
 * become one more after it. That one is sent after their commits, so a listener it wakes sees
 * their rows. A process never hears its own signals: it wakes its own worker directly.
 */
export interface WakeSignal {
  /** Tells the other processes to look now. Resolves once sent (or dropped); callers need not wait. */
  send(): Promise<void>;
  /**
   * Calls `onSignal` for every signal from another process, and once after each (re)connection,
   * when signals may have been missed. Resolves once listening; the function it answers stops.
   */
  listen(onSignal: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const RECONNECT_DELAY_MS = 1_000;

export function createWakeSignal(options: { pool: pg.Pool; connectionString: string; schema: string | undefined; connectTimeoutMs: number }): WakeSignal {
  // One channel per schema: tests and benches run side by side on one database, each in its own.
  const channel = `msgsvc_jobs_${options.schema ?? 'public'}`;
  const self = randomBytes(8).toString('hex');
  let closed = false;
  let sending: Promise<void> | undefined;
  let again = false;
  const listeners = new Set<Listener>();

  async function notify(): Promise<void> {
    try {
      await options.pool.query('select pg_notify($1, $2)', [channel, self]);
    } catch {
      // Lost: the poll finds the jobs.
    }
  }

  function send(): Promise<void> {
    if (closed) return Promise.resolve();
    if (sending) {
      again = true;
      return sending;
    }
    sending = notify().then(() => {
      sending = undefined;
      if (again && !closed) {
        again = false;
        return send();
      }
    });
    return sending;
  }

  return {
    send,
    async listen(onSignal) {
      const listener = new Listener(
        { connectionString: options.connectionString, connectionTimeoutMillis: options.connectTimeoutMs },
        channel,
        (from) => from !== self && onSignal(),
        onSignal,
      );
      listeners.add(listener);
      await listener.start();
      return async () => {
        listeners.delete(listener);
        await listener.stop();
      };
    },
    async close() {
      closed = true;
      await sending;
      await Promise.all([...listeners].map((listener) => listener.stop()));
      listeners.clear();
    },
  };
}

/** One `LISTEN` on a connection of its own (a pooled one would be handed to queries), reconnecting. */
class Listener {
  readonly #connection: pg.ClientConfig;
  readonly #channel: string;
  readonly #onNotification: (payload: string | undefined) => void;
  readonly #onConnected: () => void;
  #client: pg.Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;

  // A connection timeout too: a stopping worker waits for its listener's first connection.
  constructor(connection: pg.ClientConfig, channel: string, onNotification: (payload: string | undefined) => void, onConnected: () => void) {
    this.#connection = connection;
    this.#channel = channel;
    this.#onNotification = onNotification;
    this.#onConnected = onConnected;
  }

  /** Resolves once listening; a first connection that fails is retried like a lost one. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new (pgDriver().Client)(this.#connection);
    this.#client = client;
    const lost = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      void client.end().catch(() => undefined);
      if (!this.#stopped) this.#retry = setTimeout(() => void this.#connect(), RECONNECT_DELAY_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      if (message.channel === this.#channel) this.#onNotification(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.#channel)}`);
    } catch {
      lost();
      return;
    }
    if (this.#stopped) return;
    // Whatever was announced while this connection was not listening, look for it now.
    this.#onConnected();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }
}
