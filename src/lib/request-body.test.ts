import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { request } from 'undici';
import { discardRequestBody } from './request-body.ts';

const MAX = 256 * 1024;

/** A loopback server that discards each body (at most `MAX`) and answers what the discarding said. */
async function startDiscarding(t: TestContext): Promise<string> {
  const server = createServer((incoming: IncomingMessage, response) => {
    void discardRequestBody(incoming, MAX).then((whole) => response.writeHead(200, { connection: 'close' }).end(JSON.stringify({ whole })));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function* chunks(size: number) {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  for (let offset = 0; offset < size; offset += chunk.length) yield chunk.subarray(0, Math.min(chunk.length, size - offset));
}

const discarded = async (url: string, size: number, declared: boolean) => {
  const response = await request(url, {
    method: 'POST',
    headers: declared ? { 'content-length': String(size) } : {},
    body: Readable.from(chunks(size)),
  });
  return ((await response.body.json()) as { whole: boolean }).whole;
};

describe('discarding the rest of a request body', () => {
  it('waits for a body up to the limit to arrive, declared or chunked', async (t) => {
    const url = await startDiscarding(t);
    assert.equal(await discarded(url, MAX, true), true);
    assert.equal(await discarded(url, MAX, false), true);
  });

  it('gives up on a body declared larger than the limit, and on one that turns out larger', async (t) => {
    const url = await startDiscarding(t);
    assert.equal(await discarded(url, MAX + 1, true), false);
    assert.equal(await discarded(url, 4 * MAX, false), false);
  });
});
