import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { Pool } from 'undici';
import { EndOfTurnWrites, MAX_HELD_ANSWERS, registerEndOfTurnWrites } from './end-of-turn-writes.ts';
import { createHttpServer } from './server.ts';

/** A scheduler the test runs by hand, standing in for the end of the turn. */
function manualTurn() {
  const runs: (() => void)[] = [];
  return {
    schedule: (run: () => void) => void runs.push(run),
    get scheduled() {
      return runs.length;
    },
    end() {
      for (const run of runs.splice(0)) run();
    },
  };
}

/** What `hold` reads of a request: its logger and socket, for an answer that cannot be written. */
function requestStub(onDestroy: () => void = () => undefined) {
  const logged: unknown[] = [];
  const request = {
    log: { error: (entry: unknown) => void logged.push(entry) },
    raw: { socket: { destroy: onDestroy } },
    routeOptions: { url: '/stub' },
  } as unknown as FastifyRequest;
  return { request, logged };
}

describe('EndOfTurnWrites', () => {
  it('holds each answer until the end of the turn, then writes them in the order they were ready, scheduling once', () => {
    const turn = manualTurn();
    const writes = new EndOfTurnWrites(turn.schedule);
    const written: unknown[] = [];
    const keep = (_error: null, body: unknown) => void written.push(body);
    for (const payload of ['a', 'b', 'c']) writes.hold(requestStub().request, keep, payload);
    assert.equal(written.length, 0);
    assert.equal(turn.scheduled, 1);
    turn.end();
    assert.deepEqual(written, ['a', 'b', 'c']);
    // The next turn schedules its own end.
    writes.hold(requestStub().request, keep, 'd');
    assert.equal(turn.scheduled, 1);
    turn.end();
    assert.deepEqual(written, ['a', 'b', 'c', 'd']);
  });

  it(`writes at once when ${MAX_HELD_ANSWERS} answers are held, and what comes later in the turn at its end`, () => {
    const turn = manualTurn();
    const writes = new EndOfTurnWrites(turn.schedule);
    const written: number[] = [];
    const release = (_error: null, body: unknown) => void written.push(body as number);
    for (let i = 0; i < MAX_HELD_ANSWERS - 1; i++) writes.hold(requestStub().request, release, i);
    assert.equal(written.length, 0);
    writes.hold(requestStub().request, release, MAX_HELD_ANSWERS - 1);
    assert.deepEqual(written, [...Array(MAX_HELD_ANSWERS).keys()]);
    writes.hold(requestStub().request, release, 100);
    assert.equal(turn.scheduled, 1, 'the turn already has its end scheduled');
    turn.end();
    assert.deepEqual(written, [...Array(MAX_HELD_ANSWERS).keys(), 100]);
  });

  it('writes an answer held twice (a reply sent again while held) once, and logs the mistake', () => {
    const turn = manualTurn();
    const writes = new EndOfTurnWrites(turn.schedule);
    const written: unknown[] = [];
    const keep = (_error: null, body: unknown) => void written.push(body);
    const twice = requestStub();
    writes.hold(twice.request, keep, 'first');
    writes.hold(requestStub().request, keep, 'other');
    writes.hold(twice.request, keep, undefined);
    turn.end();
    assert.deepEqual(written, ['first', 'other']);
    assert.deepEqual(twice.logged, [{ route: '/stub' }]);
  });

  it('writes the rest of the turn when one answer cannot be written, and closes that one connection', () => {
    const turn = manualTurn();
    const writes = new EndOfTurnWrites(turn.schedule);
    const written: unknown[] = [];
    let destroyed = 0;
    const failing = requestStub(() => destroyed++);
    writes.hold(requestStub().request, (_error, body) => void written.push(body), 'before');
    writes.hold(
      failing.request,
      () => {
        throw new Error('the socket went away');
      },
      'lost',
    );
    writes.hold(requestStub().request, (_error, body) => void written.push(body), 'after');
    turn.end();
    assert.deepEqual(written, ['before', 'after']);
    assert.equal(destroyed, 1);
    assert.equal(failing.logged.length, 1);
  });
});

async function listening(t: TestContext) {
  const app = createHttpServer({ publicBaseUrl: 'http://localhost:3000', logLevel: 'silent', trustProxy: false });
  t.after(() => app.close());
  registerEndOfTurnWrites(app);
  return app;
}

const urlOf = (app: Awaited<ReturnType<typeof listening>>) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

describe('answers written at the end of the turn, over a socket', () => {
  it("holds the write after the route's own onSend hooks, and writes it before the turn is over", async (t) => {
    const app = await listening(t);
    const seen: Record<string, boolean> = {};
    let sending = false;
    app.get(
      '/answer',
      {
        onSend: (_request, _reply, payload, done) => {
          seen.routeHookRanInSend = sending;
          done(null, payload);
        },
      },
      (_request, reply) => {
        sending = true;
        void reply.send({ ok: true });
        sending = false;
        seen.writtenWhenSendReturned = reply.raw.headersSent;
        // Scheduled after the hold's own end of turn, so it runs after the write.
        setImmediate(() => (seen.writtenByEndOfTurn = reply.raw.headersSent));
      },
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    const answer = await fetch(`${urlOf(app)}/answer`);
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { ok: true });
    assert.match(answer.headers.get('x-request-id') ?? '', /^req_/);
    assert.deepEqual(seen, { routeHookRanInSend: true, writtenWhenSendReturned: false, writtenByEndOfTurn: true });
  });

  it('answers once, on a connection kept open, an async handler that sends without returning the reply', async (t) => {
    const app = await listening(t);
    let connections = 0;
    app.server.on('connection', () => connections++);
    app.get('/forgot-to-return', async (_request, reply) => {
      void reply.send({ once: true });
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const pool = new Pool(urlOf(app), { connections: 1 });
    t.after(() => pool.close());
    for (let i = 0; i < 3; i++) {
      const { statusCode, body } = await pool.request({ method: 'GET', path: '/forgot-to-return' });
      assert.equal(statusCode, 200);
      assert.equal(await body.text(), '{"once":true}');
    }
    assert.equal(connections, 1);
  });

  it('answers each of many concurrent requests with its own answer', async (t) => {
    const app = await listening(t);
    app.get<{ Params: { n: string } }>('/echo/:n', async (request, reply) => {
      // Some answer at once, some a little later: the turns mix answers held and written.
      if (Number(request.params.n) % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
      return reply.header('x-n', request.params.n).send({ n: request.params.n });
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const pool = new Pool(urlOf(app), { connections: 10 });
    t.after(() => pool.close());
    const answers = await Promise.all(
      Array.from({ length: 200 }, async (_, n) => {
        const { statusCode, headers, body } = await pool.request({ method: 'GET', path: `/echo/${n}` });
        return { n, statusCode, header: headers['x-n'], body: (await body.json()) as { n: string } };
      }),
    );
    for (const { n, statusCode, header, body } of answers) {
      assert.equal(statusCode, 200);
      assert.equal(header, String(n));
      assert.deepEqual(body, { n: String(n) });
    }
  });
});
