/**
 * The dashboard's live-stream client (web/src/live/), against scripted answers: the SSE parsing of
 * any chunking, and what it does when a connection ends (renew, resume, back off), checked here
 * without a browser or a server so each case is exact. The browser tests (test/browser/inbox-live)
 * run it against the real stream.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSseParser } from '../web/src/live/sse.ts';
import { startEventStream, type EventStreamOptions, type LiveStatus } from '../web/src/live/stream.ts';

describe('dashboard stream client: parsing', () => {
  it('reads blocks whatever the chunking: CRLF split across chunks, comments, multi-line data, retry', () => {
    const text =
      ': heartbeat\r\n\r\nretry: 1500\r\n\r\nid: evt_1\r\nevent: message.received\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: stream.expired\ndata: {}\n\nid: evt_2\n\n';
    const whole = createSseParser().push(text);
    for (let size = 1; size <= text.length; size++) {
      const parser = createSseParser();
      const blocks = [];
      for (let at = 0; at < text.length; at += size) blocks.push(...parser.push(text.slice(at, at + size)));
      assert.deepEqual(blocks, whole, `chunks of ${size}`);
    }
    assert.deepEqual(whole, [
      { retry: 1500 },
      { message: { id: 'evt_1', event: 'message.received', data: '{"a":\n1}' } },
      { message: { id: undefined, event: 'stream.expired', data: '{}' } },
      { id: 'evt_2' },
    ]);
  });
});

/** One scripted connection: its request, and the body the test writes to. */
interface Connection {
  token: string | null;
  headers: Record<string, string>;
  write(text: string): void;
  end(): void;
  fail(): void;
}

function harness() {
  let token = 'token-1';
  const connections: Connection[] = [];
  const waiting: ((connection: Connection) => void)[] = [];
  const events: string[] = [];
  const statuses: LiveStatus[] = [];
  const renewals: string[] = [];
  let stale = 0;
  /** How the next request is answered: a stream (the default) or a status. */
  const answers: number[] = [];
  const options: EventStreamOptions = {
    async open(_path, { headers, signal }) {
      const status = answers.shift() ?? 200;
      if (status !== 200) return new Response(JSON.stringify({ error: {} }), { status });
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
      signal.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')));
      const connection: Connection = {
        token,
        headers,
        write: (text) => controller.enqueue(new TextEncoder().encode(text)),
        end: () => controller.close(),
        fail: () => controller.error(new TypeError('network error')),
      };
      connections.push(connection);
      waiting.shift()?.(connection);
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    },
    currentToken: () => token,
    async renew(previous) {
      renewals.push(previous);
      token = `token-${renewals.length + 1}`;
      return token;
    },
    onEvent: (event) => void events.push(event.id),
    onStale: () => void stale++,
    onStatus: (status) => void statuses.push(status),
  };
  return {
    options,
    connections,
    events,
    statuses,
    renewals,
    answers,
    stale: () => stale,
    /** The next connection the client opens (or the one it opened already, not yet taken). */
    next(): Promise<Connection> {
      return new Promise((resolve) => waiting.push(resolve));
    },
    async until(check: () => boolean): Promise<void> {
      while (!check()) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const event = (id: string) =>
  `id: ${id}\nevent: message.received\ndata: ${JSON.stringify({ id, object: 'event', type: 'message.received', data: { object: {} } })}\n\n`;

describe('dashboard stream client: connections', () => {
  it('resumes with Last-Event-ID after a drop, and hands a replayed event on once', async (t) => {
    const h = harness();
    const first = h.next();
    const stream = startEventStream(h.options);
    t.after(() => stream.stop());
    const one = await first;
    assert.equal(one.headers['last-event-id'], undefined);
    assert.equal(one.headers.accept, 'text/event-stream');
    one.write('retry: 1\n\n' + event('evt_1') + event('evt_2'));
    await h.until(() => h.events.length === 2);
    const second = h.next();
    one.fail();
    const two = await second;
    assert.equal(two.headers['last-event-id'], 'evt_2');
    // The server replays from its own idea of the resume point: the overlap is handed on once.
    two.write(event('evt_2') + event('evt_3'));
    await h.until(() => h.events.length === 3);
    assert.deepEqual(h.events, ['evt_1', 'evt_2', 'evt_3']);
    assert.deepEqual(h.statuses, ['connecting', 'live', 'reconnecting', 'live']);
    // Only the first connection may have missed what was loaded before it.
    assert.equal(h.stale(), 1);
  });

  it('renews the token when the stream says it expired, and reconnects at once with it and Last-Event-ID', async (t) => {
    const h = harness();
    const first = h.next();
    const stream = startEventStream(h.options);
    t.after(() => stream.stop());
    const one = await first;
    one.write(event('evt_9'));
    await h.until(() => h.events.length === 1);
    const second = h.next();
    one.write('event: stream.expired\ndata: {"reason":"credential_expired","message":"…"}\n\n');
    one.end();
    const two = await second;
    assert.deepEqual(h.renewals, ['token-1']);
    assert.equal(two.token, 'token-2');
    assert.equal(two.headers['last-event-id'], 'evt_9');
  });

  it('renews on a 401 and tries again with the new token', async (t) => {
    const h = harness();
    h.answers.push(401);
    const first = h.next();
    const stream = startEventStream(h.options);
    t.after(() => stream.stop());
    const one = await first;
    assert.deepEqual(h.renewals, ['token-1']);
    assert.equal(one.token, 'token-2');
  });

  it('refetches what is shown when the server cannot resume (stream.reset), and reads on', async (t) => {
    const h = harness();
    const first = h.next();
    const stream = startEventStream(h.options);
    t.after(() => stream.stop());
    const one = await first;
    await h.until(() => h.stale() === 1);
    one.write('event: stream.reset\ndata: {"reason":"too_many_missed","message":"…"}\n\n' + event('evt_5'));
    await h.until(() => h.events.length === 1);
    assert.equal(h.stale(), 2);
    assert.equal(h.connections.length, 1);
  });

  it('stops for good when the session is over, and when stopped', async () => {
    const h = harness();
    const first = h.next();
    const sessionOver = async () => null;
    h.options.renew = sessionOver;
    const stream = startEventStream(h.options);
    const one = await first;
    one.write('event: stream.expired\ndata: {}\n\n');
    one.end();
    await h.until(() => h.statuses.at(-1) === 'stopped');
    assert.equal(h.connections.length, 1);
    stream.stop();

    const again = harness();
    const opened = again.next();
    const running = startEventStream(again.options);
    await opened;
    running.stop();
    await again.until(() => again.statuses.at(-1) === 'stopped');
    assert.equal(again.connections.length, 1);
  });
});
