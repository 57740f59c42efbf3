/**
 * Another system's HTTP API on loopback, for connectors and their steps: records every request (method,
 * URL, headers, body) and answers as the test says (`json`, or any function of the request).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { Scope } from './harness.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An API on loopback, closed when `scope` ends. */
export async function startApi(scope: Scope) {
  const seen: Seen[] = [];
  let answer: (request: Seen, response: ServerResponse) => void = (_request, response) => void response.writeHead(200).end();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(entry);
      answer(entry, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  scope.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    answer(next: typeof answer) {
      answer = next;
    },
    json(status: number, body: unknown) {
      answer = (_request, response) => void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    },
  };
}

export type FakeApi = Awaited<ReturnType<typeof startApi>>;
