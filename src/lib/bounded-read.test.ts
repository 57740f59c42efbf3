import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Pool } from 'undici';
import { closed } from '../../test/sockets.ts';
import { BoundedRead, type ReadLimits, type ReadOutcome } from './bounded-read.ts';

const LIMITS: ReadLimits = { keepBytes: 8, maxBytes: 1_000, budgetMs: 5_000 };

interface Peer {
  pool: Pool;
  /** Every connection the server accepted. */
  sockets: Socket[];
}

/** A real HTTP server on loopback answering with `handler`, and a pool to it; both closed when the test ends. */
async function peer(t: TestContext, handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<Peer> {
  const server = createServer(handler);
  const sockets: Socket[] = [];
  server.on('connection', (socket) => sockets.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  t.after(async () => {
    await pool.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { pool, sockets };
}

function send(pool: Pool, limits: ReadLimits = LIMITS): BoundedRead {
  const read = new BoundedRead(limits);
  pool.dispatch({ path: '/', method: 'POST', body: '{}' }, read);
  return read;
}

function answered(outcome: ReadOutcome): Extract<ReadOutcome, { kind: 'response' }> {
  assert.ok(outcome.kind === 'response', `an answer, got ${JSON.stringify(outcome)}`);
  return outcome;
}

describe('reading an answer within limits', () => {
  it('keeps the first keepBytes of a whole body and counts all of it', async (t) => {
    const { pool } = await peer(t, (_request, response) => response.writeHead(201, { 'x-answer': 'yes' }).end('0123456789abcdef'));
    const outcome = answered(await send(pool).outcome);
    assert.equal(outcome.status, 201);
    assert.equal(outcome.headers['x-answer'], 'yes');
    assert.equal(outcome.body.toString(), '01234567');
    assert.equal(outcome.bytesRead, 16);
    assert.equal(outcome.complete, true);
  });

  it('skips an interim 1xx answer and reads the final one', async (t) => {
    const { pool } = await peer(t, (_request, response) => {
      response.writeEarlyHints({ link: '</style.css>; rel=preload' });
      response.end('done');
    });
    const outcome = answered(await send(pool).outcome);
    assert.equal(outcome.status, 200);
    assert.equal(outcome.body.toString(), 'done');
  });

  it('stops at maxBytes, keeps what arrived and closes the connection', async (t) => {
    const { pool, sockets } = await peer(t, (_request, response) => {
      response.writeHead(200);
      response.write(Buffer.alloc(600, 'a'));
      setTimeout(() => response.write(Buffer.alloc(600, 'b')), 20);
      // Never ends: only the reader's stop ends the exchange.
    });
    const outcome = answered(await send(pool, { ...LIMITS, maxBytes: 1_000 }).outcome);
    assert.equal(outcome.complete, false);
    assert.ok(outcome.bytesRead >= 1_000, `read ${outcome.bytesRead}`);
    assert.equal(outcome.body.toString(), 'aaaaaaaa');
    await Promise.all(sockets.map(closed));
  });

  it('a body cut off by the peer after the headers leaves the status standing', async (t) => {
    const { pool } = await peer(t, (_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial', () => response.socket?.destroy());
    });
    const outcome = answered(await send(pool).outcome);
    assert.equal(outcome.status, 200);
    assert.equal(outcome.complete, false);
    assert.equal(outcome.body.toString(), 'partial');
  });
});

describe('giving up on an unanswered request', () => {
  it('settles at once with the reason and closes the connection', async (t) => {
    const { pool, sockets } = await peer(t, () => undefined);
    const read = send(pool);
    while (sockets.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const reason = new Error('deadline');
    read.abortUnanswered(reason);
    assert.deepEqual(await read.outcome, { kind: 'error', error: reason });
    await Promise.all(sockets.map(closed));
  });

  it('before undici has started the request, the request is aborted when it starts', async (t) => {
    let requests = 0;
    const { pool } = await peer(t, (_request, response) => {
      requests += 1;
      response.end('late');
    });
    const read = new BoundedRead(LIMITS);
    const reason = new Error('deadline');
    read.abortUnanswered(reason);
    pool.dispatch({ path: '/', method: 'POST', body: '{}' }, read);
    assert.deepEqual(await read.outcome, { kind: 'error', error: reason });
    // A later request on the same pool is answered, and the aborted one never reached the peer.
    answered(await send(pool).outcome);
    assert.equal(requests, 1);
  });

  it('once the headers have arrived, the body is left to its own budget', async (t) => {
    let finish: (() => void) | undefined;
    const { pool } = await peer(t, (_request, response) => {
      response.writeHead(200);
      response.write('head');
      finish = () => response.end('tail');
    });
    const read = send(pool);
    while (!read.answered) await new Promise((resolve) => setImmediate(resolve));
    read.abortUnanswered(new Error('deadline'));
    finish!();
    const outcome = answered(await read.outcome);
    assert.equal(outcome.complete, true);
    assert.equal(outcome.body.toString(), 'headtail');
  });
});
