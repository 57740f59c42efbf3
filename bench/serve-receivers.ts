/**
 * Webhook receivers for benchmarks, in a child process started by bench/lib.ts (`startHelper`):
 * BENCH_RECEIVERS plain node:http servers on loopback, each answering 200 at once and noting, for
 * every request, when it arrived and how long after its event's `created_at`. In a process of their
 * own, so that receiving neither slows the service nor waits behind the bench's load generator.
 *
 * Commands: `urls` (every receiver's URL), `reset` (forget what arrived), `waitFor` (resolve once a
 * number of requests has arrived, or at a time limit, with what was seen).
 */
import { createServer, type Server } from 'node:http';
import { reportToParent } from './lib.ts';

export interface ReceiptSummary {
  /** Requests that arrived, and distinct (receiver, event id) pairs among them. */
  received: number;
  distinct: number;
  perReceiver: number[];
  /** Epoch milliseconds (fractional) of the first and the last arrival. */
  firstAt: number;
  lastAt: number;
  /** Per request, arrival time minus the envelope's created_at, in milliseconds (sorted). */
  latenciesMs: number[];
  /** One body and its headers as they arrived: what the baseline sends. */
  sample: { body: string; headers: Record<string, string> } | null;
  timedOut: boolean;
}

const count = Number(process.env.BENCH_RECEIVERS ?? '1');
// Epoch time with sub-millisecond resolution, on the same clock as the service's Date.
const now = () => performance.timeOrigin + performance.now();

let arrivals: { at: number; receiver: number; eventId: string; latencyMs: number }[] = [];
let sample: ReceiptSummary['sample'] = null;
let waiter: { total: number; resolve: () => void } | undefined;

function receiver(index: number): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = now();
      const body = Buffer.concat(chunks).toString('utf8');
      let createdAt = Number.NaN;
      let eventId = String(request.headers['service-event-id'] ?? '');
      try {
        const envelope = JSON.parse(body) as { id?: string; created_at?: string };
        createdAt = Date.parse(envelope.created_at ?? '');
        eventId ||= envelope.id ?? '';
      } catch {
        // Not an envelope; counted all the same, without a latency.
      }
      arrivals.push({ at, receiver: index, eventId, latencyMs: at - createdAt });
      if (!sample) {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value;
        sample = { body, headers };
      }
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (waiter && arrivals.length >= waiter.total) waiter.resolve();
    });
  });
}

const servers = Array.from({ length: count }, (_, index) => receiver(index));
const ports = await Promise.all(
  servers.map(
    (server) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
          const address = server.address();
          if (!address || typeof address === 'string') reject(new Error('a receiver did not bind a TCP port'));
          else resolve(address.port);
        });
      }),
  ),
);

function summary(timedOut: boolean): ReceiptSummary {
  const perReceiver = Array.from({ length: count }, () => 0);
  const pairs = new Set<string>();
  for (const arrival of arrivals) {
    perReceiver[arrival.receiver]!++;
    pairs.add(`${arrival.receiver} ${arrival.eventId}`);
  }
  return {
    received: arrivals.length,
    distinct: pairs.size,
    perReceiver,
    firstAt: arrivals[0]?.at ?? Number.NaN,
    lastAt: arrivals.at(-1)?.at ?? Number.NaN,
    latenciesMs: arrivals
      .map((arrival) => arrival.latencyMs)
      .filter(Number.isFinite)
      .sort((a, b) => a - b),
    sample,
    timedOut,
  };
}

reportToParent(
  ports[0]!,
  async () => {
    await Promise.all(
      servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
  },
  {
    urls: async () => ports.map((port) => `http://127.0.0.1:${port}/hooks`),
    async reset() {
      arrivals = [];
      sample = null;
    },
    async waitFor(args: { total: number; timeoutMs: number }): Promise<ReceiptSummary> {
      if (arrivals.length < args.total) {
        const arrived = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), args.timeoutMs);
          waiter = {
            total: args.total,
            resolve: () => {
              clearTimeout(timer);
              resolve(true);
            },
          };
        });
        waiter = undefined;
        if (!arrived) return summary(true);
      }
      return summary(false);
    },
  },
);
