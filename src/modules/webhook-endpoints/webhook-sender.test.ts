import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { describe, it, type TestContext } from 'node:test';
import { closed } from '../../../test/sockets.ts';
import { AppError } from '../../lib/errors.ts';
import { createWebhookSender, type WebhookSender, type WebhookSenderOptions } from './webhook-sender.ts';

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Receiver {
  port: number;
  url(path?: string): string;
  received: Received[];
  /** Every TCP connection the receiver accepted, open or closed. */
  sockets: Socket[];
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse, body: Buffer) => void;

/** A real HTTP server on loopback that records what reaches it; closed when the test ends. */
async function startReceiver(t: TestContext, handler: Handler = (_request, response) => response.end('ok'), host = '127.0.0.1', port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const sockets: Socket[] = [];
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      handler(request, response, body);
    });
  });
  server.on('connection', (socket) => sockets.push(socket));
  server.listen(port, host);
  await once(server, 'listening');
  const { port: boundPort } = server.address() as AddressInfo;
  const receiver: Receiver = {
    port: boundPort,
    url: (path = '/hook') => `http://${host}:${boundPort}${path}`,
    received,
    sockets,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  t.after(() => receiver.close());
  return receiver;
}

/** A sender, closed when the test ends. */
function sender(t: TestContext, options: Partial<WebhookSenderOptions> = {}): WebhookSender {
  const created = createWebhookSender({ allowPrivateNetworks: true, ...options });
  t.after(() => created.close());
  return created;
}

/** A lookup that answers from a script, one entry per call (the last one repeats), and counts calls. */
function scriptedLookup(...answers: string[][]) {
  const calls: string[] = [];
  const lookup = async (hostname: string) => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    return answer.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return { lookup, calls };
}

async function assertRefused(promise: Promise<void>, code: 'url_not_allowed' | 'validation_failed', param: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AppError, `an AppError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.param, param);
    return true;
  });
}

const BODY = '{"id":"evt_01JEXAMPLE","object":"event","type":"ping", "data":{"object":{"note":"héllo 👋"}}}\n';

describe('the webhook sender', () => {
  describe('delivering to a receiver', () => {
    it('a 2xx answer is a response with its status and body excerpt', async (t) => {
      const receiver = await startReceiver(t, (_request, response) => {
        response.statusCode = 201;
        response.end('thanks, got it');
      });
      const result = await sender(t).send(receiver.url(), BODY, {});
      assert.equal(result.kind, 'response');
      assert.equal(result.kind === 'response' && result.status, 201);
      assert.equal(result.kind === 'response' && result.excerpt, 'thanks, got it');
      assert.ok(result.durationMs >= 0 && result.durationMs < 5_000);
    });

    it('the receiver gets the exact body bytes, the given headers, JSON content type and the user agent', async (t) => {
      const receiver = await startReceiver(t);
      const result = await sender(t).send(receiver.url('/hooks/in?source=test&x=1'), BODY, {
        'Service-Signature': 't=1,v1=abc',
        'X-Custom': 'value',
        'Content-Type': 'text/plain',
        Host: 'evil.example',
      });
      assert.equal(result.kind, 'response');
      const [request] = receiver.received;
      assert.ok(request);
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/hooks/in?source=test&x=1');
      assert.ok(request.body.equals(Buffer.from(BODY, 'utf8')), 'the body bytes are exactly those sent');
      assert.equal(request.headers['content-length'], String(Buffer.byteLength(BODY)));
      assert.equal(request.headers['content-type'], 'application/json');
      assert.equal(request.headers['user-agent'], 'MessagingService-Webhooks/1.0');
      assert.equal(request.headers['service-signature'], 't=1,v1=abc');
      assert.equal(request.headers['x-custom'], 'value');
      assert.equal(request.headers.host, `127.0.0.1:${receiver.port}`);
    });

    it('the user agent can be configured', async (t) => {
      const receiver = await startReceiver(t);
      await sender(t, { userAgent: 'Custom/2.0' }).send(receiver.url(), BODY, {});
      assert.equal(receiver.received[0]?.headers['user-agent'], 'Custom/2.0');
    });

    it('a 500 is a response, not an error', async (t) => {
      const receiver = await startReceiver(t, (_request, response) => {
        response.statusCode = 500;
        response.end('{"error":"boom"}');
      });
      const result = await sender(t).send(receiver.url(), BODY, {});
      assert.deepEqual({ ...result, durationMs: 0 }, { kind: 'response', status: 500, excerpt: '{"error":"boom"}', durationMs: 0 });
    });

    it('keeps connections alive across deliveries to the same receiver', async (t) => {
      const receiver = await startReceiver(t);
      const client = sender(t);
      for (let i = 0; i < 20; i++) assert.equal((await client.send(receiver.url(), BODY, {})).kind, 'response');
      assert.equal(receiver.received.length, 20);
      // The pool may open a second connection while the first is being released, but no more.
      assert.ok(receiver.sockets.length <= 2, `${receiver.sockets.length} connections for 20 deliveries`);
      assert.ok(receiver.sockets.every((socket) => !socket.destroyed));
    });

    it('many concurrent deliveries all arrive', async (t) => {
      const receiver = await startReceiver(t);
      const client = sender(t);
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => client.send(receiver.url(`/hook/${i}`), BODY, {})));
      assert.ok(results.every((result) => result.kind === 'response' && result.status === 200));
      assert.equal(receiver.received.length, 200);
    });
  });

  describe('redirects', () => {
    for (const status of [301, 302, 307, 308]) {
      it(`a ${status} is returned as the response and its Location is never requested`, async (t) => {
        const target = await startReceiver(t);
        const receiver = await startReceiver(t, (_request, response) => {
          response.writeHead(status, { location: target.url('/elsewhere') });
          response.end();
        });
        const result = await sender(t).send(receiver.url(), BODY, {});
        assert.equal(result.kind, 'response');
        assert.equal(result.kind === 'response' && result.status, status);
        assert.equal(target.received.length, 0);
        assert.equal(target.sockets.length, 0);
      });
    }
  });

  describe('failures are results, never exceptions', () => {
    it('a receiver that drops the connection is connection_reset', async (t) => {
      const receiver = await startReceiver(t, (request) => request.socket.destroy());
      const result = await sender(t).send(receiver.url(), BODY, {});
      assert.deepEqual({ ...result, durationMs: 0 }, { kind: 'error', error: 'connection_reset', durationMs: 0 });
    });

    it('a closed port is connection_refused', async (t) => {
      const closed = await startReceiver(t);
      const url = closed.url();
      await closed.close();
      const result = await sender(t).send(url, BODY, {});
      assert.deepEqual({ ...result, durationMs: 0 }, { kind: 'error', error: 'connection_refused', durationMs: 0 });
    });

    it('a name that does not resolve is dns_failed', async (t) => {
      const failing = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
      };
      const empty = async () => [];
      for (const lookup of [failing, empty]) {
        const result = await sender(t, { lookup }).send('http://nowhere.invalid/hook', BODY, {});
        assert.equal(result.kind === 'error' && result.error, 'dns_failed');
      }
    });

    it('TLS spoken to a plain HTTP server is a tls_error', async (t) => {
      const receiver = await startReceiver(t);
      const result = await sender(t).send(`https://127.0.0.1:${receiver.port}/hook`, BODY, {});
      assert.equal(result.kind, 'error');
      assert.match(result.kind === 'error' ? result.error : '', /^tls_error: /);
    });

    it('a URL that is not one, or has another scheme, is an error result', async (t) => {
      const client = sender(t);
      assert.equal((await client.send('not a url', BODY, {})).kind, 'error');
      const ftp = await client.send('ftp://127.0.0.1/x', BODY, {});
      assert.equal(ftp.kind === 'error' && ftp.error, 'url_not_allowed: scheme ftp:');
    });

    it('after close, sending is an error result', async () => {
      const client = createWebhookSender({ allowPrivateNetworks: true });
      await client.close();
      const result = await client.send('http://127.0.0.1:9/x', BODY, {});
      assert.equal(result.kind === 'error' && result.error, 'sender_closed');
    });
  });

  describe('the 10-second time-out', () => {
    it('a receiver answering after 9.9 s succeeds and one answering after 10.1 s fails with timeout', { timeout: 20_000 }, async (t) => {
      let lateRequestClosed!: () => void;
      const lateRequestAbandoned = new Promise<void>((resolve) => (lateRequestClosed = resolve));
      const receiver = await startReceiver(t, (request, response) => {
        const delay = Number(new URL(request.url!, 'http://x').searchParams.get('delay'));
        response.on('close', () => {
          if (!response.writableFinished) lateRequestClosed();
        });
        // The scenario itself: a receiver that answers late, on either side of the sender's 10 s.
        setTimeout(() => {
          if (!response.destroyed) response.end('late but fine');
        }, delay);
      });
      const client = sender(t);
      const started = Date.now();
      const [inTime, tooLate] = await Promise.all([
        client.send(receiver.url('/hook?delay=9900'), BODY, {}),
        client.send(receiver.url('/hook?delay=10100'), BODY, {}),
      ]);
      assert.equal(inTime.kind === 'response' && inTime.status, 200, JSON.stringify(inTime));
      assert.equal(inTime.kind === 'response' && inTime.excerpt, 'late but fine');
      assert.ok(inTime.durationMs >= 9_900, `took ${inTime.durationMs} ms`);
      assert.equal(tooLate.kind === 'error' && tooLate.error, 'timeout', JSON.stringify(tooLate));
      assert.ok(tooLate.durationMs >= 10_000 && tooLate.durationMs < 10_100, `gave up after ${tooLate.durationMs} ms`);
      assert.ok(Date.now() - started < 10_900, 'both ran at once');
      // The late request's connection was closed by the sender, not left hanging.
      await lateRequestAbandoned;
    });

    it('the time-out covers name resolution too', async (t) => {
      const hanging = () => new Promise<never>(() => undefined);
      const client = sender(t, { lookup: hanging, timeoutMs: 200 });
      const result = await client.send('http://hangs.example/hook', BODY, {});
      assert.equal(result.kind === 'error' && result.error, 'timeout');
      // Bounded, not timed to the millisecond: a timer may fire a fraction early by the clock that measures it.
      assert.ok(result.durationMs >= 190 && result.durationMs < 5_000, `gave up after ${result.durationMs} ms`);
    });
  });

  describe('large response bodies', () => {
    it('a 5 MB body is cut after 64 KiB: the sender closes the connection and keeps a 1,000-character excerpt', async (t) => {
      let written = 0;
      const total = 5 * 1024 * 1024;
      const receiver = await startReceiver(t, (_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain', 'content-length': total });
        const chunk = Buffer.alloc(16 * 1024, 'a');
        const pump = () => {
          while (written < total && !response.destroyed) {
            written += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', pump);
          }
          if (written >= total) response.end();
        };
        pump();
      });
      const result = await sender(t).send(receiver.url(), BODY, {});
      assert.equal(result.kind === 'response' && result.status, 200);
      const excerpt = result.kind === 'response' ? result.excerpt : '';
      assert.equal(excerpt.length, 1_000);
      assert.equal(excerpt, 'a'.repeat(1_000));
      // The receiver sees its connection closed while the sender is still open: it stopped reading.
      const [socket] = receiver.sockets;
      assert.ok(socket);
      await closed(socket);
      assert.ok(written < total, `the receiver could not write the whole body (wrote ${written} of ${total} bytes)`);
    });

    it('the excerpt never splits a character', async (t) => {
      const receiver = await startReceiver(t, (_request, response) => response.end('é'.repeat(999) + '👋'.repeat(10)));
      const result = await sender(t).send(receiver.url(), BODY, {});
      const excerpt = result.kind === 'response' ? result.excerpt : '';
      assert.equal(excerpt, 'é'.repeat(999));
    });

    it('a body that trickles is cut without failing the delivery', async (t) => {
      const receiver = await startReceiver(t, (_request, response) => {
        response.writeHead(200);
        response.write('first words');
        // …and never ends.
      });
      const result = await sender(t, { timeoutMs: 300 }).send(receiver.url(), BODY, {});
      assert.equal(result.kind === 'response' && result.status, 200);
      assert.equal(result.kind === 'response' && result.excerpt, 'first words');
      assert.ok(result.durationMs >= 300 && result.durationMs < 1_000, `took ${result.durationMs} ms`);
    });
  });

  describe('address pinning', () => {
    it('a name is resolved on every delivery and the connection goes to the address just resolved', async (t) => {
      const first = await startReceiver(t);
      let second: Receiver;
      try {
        second = await startReceiver(t, undefined, '127.0.0.2', first.port);
      } catch {
        return; // This machine does not route all of 127/8 to loopback; the refusal tests still cover the rule.
      }
      const { lookup, calls } = scriptedLookup(['127.0.0.1'], ['127.0.0.2']);
      const client = sender(t, { lookup });
      const url = `http://hooks.example.test:${first.port}/hook`;
      assert.equal((await client.send(url, BODY, {})).kind, 'response');
      assert.equal((await client.send(url, BODY, {})).kind, 'response');
      assert.deepEqual(calls, ['hooks.example.test', 'hooks.example.test']);
      assert.equal(first.received.length, 1);
      assert.equal(second.received.length, 1);
      // The name travels in the Host header even though the connection went to the pinned address.
      assert.equal(first.received[0]?.headers.host, `hooks.example.test:${first.port}`);
    });

    it('TLS still names the host (SNI) while connecting to the pinned address', async (t) => {
      let clientHello: Buffer = Buffer.alloc(0);
      const tcp = createTcpServer((socket) => {
        socket.once('data', (data: Buffer) => {
          clientHello = data;
          socket.destroy();
        });
      });
      tcp.listen(0, '127.0.0.1');
      await once(tcp, 'listening');
      t.after(() => new Promise<void>((resolve) => tcp.close(() => resolve())));
      const { port } = tcp.address() as AddressInfo;
      const { lookup } = scriptedLookup(['127.0.0.1']);
      const result = await sender(t, { lookup }).send(`https://hooks.example.test:${port}/hook`, BODY, {});
      assert.equal(result.kind, 'error');
      assert.ok(clientHello.includes('hooks.example.test'), 'the ClientHello carries the host name');
    });

    it('a sender keeps a bounded number of pools and closes the coldest', async (t) => {
      const receiver = await startReceiver(t);
      const { lookup } = scriptedLookup(['127.0.0.1']);
      const client = sender(t, { lookup });
      for (let i = 0; i <= 256; i++) {
        assert.equal((await client.send(`http://r${i}.example.test:${receiver.port}/hook`, BODY, {})).kind, 'response');
      }
      const first = receiver.sockets[0];
      assert.ok(first);
      await closed(first);
      assert.ok(receiver.sockets.filter((socket) => !socket.destroyed).length <= 256);
    });
  });

  describe('refusing private networks', () => {
    const refusals = [
      ['https://10.0.0.1/x', 'address_not_allowed: 10.0.0.1'],
      ['https://169.254.169.254/', 'address_not_allowed: 169.254.169.254'],
      ['https://[::ffff:127.0.0.1]/', 'address_not_allowed: ::ffff:7f00:1'],
      ['https://[::1]/', 'address_not_allowed: ::1'],
      ['https://2130706433/', 'address_not_allowed: 127.0.0.1'],
      ['https://0x7f.1/', 'address_not_allowed: 127.0.0.1'],
    ] as const;

    for (const [url, error] of refusals) {
      it(`${url} is refused on delivery and at registration`, async (t) => {
        const client = sender(t, { allowPrivateNetworks: false });
        const result = await client.send(url, BODY, {});
        assert.equal(result.kind === 'error' && result.error, error);
        await assertRefused(client.checkUrl(url, '/url'), 'url_not_allowed', '/url');
      });
    }

    for (const address of ['127.0.0.1', '::ffff:127.0.0.1', '::1', '10.1.2.3', '169.254.169.254']) {
      it(`a name that resolves to ${address} is refused on delivery and at registration, without connecting`, async (t) => {
        const receiver = await startReceiver(t);
        const { lookup } = scriptedLookup([address]);
        const client = sender(t, { allowPrivateNetworks: false, lookup });
        const url = `https://hooks.example.com:${receiver.port}/hook`;
        const result = await client.send(url, BODY, {});
        assert.equal(result.kind === 'error' && result.error, `address_not_allowed: ${address}`);
        await assertRefused(client.checkUrl(url, '/url'), 'url_not_allowed', '/url');
        assert.equal(receiver.sockets.length, 0);
      });
    }

    it('registration refuses a name when any one of its addresses is private', async (t) => {
      const { lookup } = scriptedLookup(['93.184.216.34', '10.0.0.5']);
      const client = sender(t, { allowPrivateNetworks: false, lookup });
      await assertRefused(client.checkUrl('https://hooks.example.com/x', '/url'), 'url_not_allowed', '/url');
    });

    it('DNS rebinding: a name that was public at registration and resolves to loopback later is refused on delivery', async (t) => {
      const receiver = await startReceiver(t);
      const { lookup, calls } = scriptedLookup(['93.184.216.34'], ['127.0.0.1']);
      const client = sender(t, { allowPrivateNetworks: false, lookup });
      const url = `https://rebind.example.com:${receiver.port}/hook`;
      await client.checkUrl(url, '/url');
      const result = await client.send(url, BODY, {});
      assert.equal(result.kind === 'error' && result.error, 'address_not_allowed: 127.0.0.1');
      assert.equal(calls.length, 2);
      assert.equal(receiver.sockets.length, 0);
    });

    it('a name that does not resolve is refused at registration', async (t) => {
      const lookup = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      await assertRefused(sender(t, { allowPrivateNetworks: false, lookup }).checkUrl('https://nowhere.invalid/', '/url'), 'url_not_allowed', '/url');
    });
  });

  describe('checking a URL at registration', () => {
    const publicLookup = scriptedLookup(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']).lookup;

    it('accepts a public https URL', async (t) => {
      await sender(t, { allowPrivateNetworks: false, lookup: publicLookup }).checkUrl('https://hooks.example.com/in?x=1', '/url');
      await sender(t, { allowPrivateNetworks: false }).checkUrl('https://8.8.8.8/in', '/url');
    });

    it('refuses other schemes, plain http and credentials with url_not_allowed naming the field', async (t) => {
      const client = sender(t, { allowPrivateNetworks: false, lookup: publicLookup });
      for (const url of [
        'ftp://x',
        'http://hooks.example.com/',
        'https://user:pass@example.com/',
        'https://user@example.com/',
        'file:///etc/passwd',
        'javascript:alert(1)',
      ]) {
        await assertRefused(client.checkUrl(url, '/url'), 'url_not_allowed', '/url');
      }
    });

    it('refuses a string that is not a URL with validation_failed naming the field', async (t) => {
      const client = sender(t, { allowPrivateNetworks: false, lookup: publicLookup });
      for (const url of ['not a url', '', 'hooks.example.com/in', 'https://']) {
        await assertRefused(client.checkUrl(url, '/url'), 'validation_failed', '/url');
      }
    });

    it('with private networks allowed, accepts http and loopback but still refuses other schemes and credentials', async (t) => {
      const client = sender(t, { allowPrivateNetworks: true });
      await client.checkUrl('http://127.0.0.1:3000/hook', '/url');
      await client.checkUrl('https://localhost/hook', '/url');
      await assertRefused(client.checkUrl('ftp://x', '/url'), 'url_not_allowed', '/url');
      await assertRefused(client.checkUrl('http://user:pass@127.0.0.1/', '/url'), 'url_not_allowed', '/url');
    });
  });
});
