/** A real webhook receiver on loopback: records every request's exact bytes and answers as told. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Scope } from './harness.ts';

export interface ReceivedRequest {
  /** The request's path (the receiver answers on every path): tells endpoints sharing a receiver apart. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** How to answer the next requests: a status, or a function of the request. */
  respond(answer: number | ((request: ReceivedRequest) => number)): void;
  /** Record requests but keep their answers back until `release`: the sender stays mid-request. */
  hold(): void;
  release(): void;
  /** How many requests are waiting for an answer under `hold`. */
  held(): number;
  /** Stops listening; the scope it was started in does this by itself. */
  close(): Promise<void>;
}

/** A receiver on loopback, closed when `scope` ends. */
export async function startReceiver(scope: Scope, path = '/hooks'): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  let answer: number | ((request: ReceivedRequest) => number) = 200;
  let holding = false;
  const waiting: (() => void)[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = { path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(entry);
      const reply = () => {
        const status = typeof answer === 'function' ? answer(entry) : answer;
        response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'not today');
      };
      if (holding) waiting.push(reply);
      else reply();
    });
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }));
  scope.after(close);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('receiver did not bind');
  return {
    url: `http://127.0.0.1:${address.port}${path}`,
    received,
    respond(next) {
      answer = next;
    },
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const reply of waiting.splice(0)) reply();
    },
    held: () => waiting.length,
    close,
  };
}
