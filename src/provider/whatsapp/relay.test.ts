import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { ProviderError } from '../provider.ts';
import { rejectionOf } from '../../../test/rejection.ts';
import {
  answerOf,
  bodyLimitFor,
  createGraphRelay,
  isSend,
  MAX_BODY_BYTES,
  MAX_UPLOAD_BYTES,
  parseGraphTarget,
  RelayBodyTooLargeError,
  RelayUploadStalledError,
  type GraphTarget,
  type RelayRequest,
} from './relay.ts';

/**
 * The relay against throwaway loopback providers: what goes on the wire, what comes back, and every
 * way a provider can fail to answer. The runtime module's tests run the same relay through the whole
 * service against the sandbox.
 */

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A fake provider on loopback; `handle` answers (or misbehaves), after the body has been read. */
async function fakeProvider(t: TestContext, handle: (seen: Seen, res: ServerResponse, req: IncomingMessage) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(record);
      handle(record, res, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function target(text: string): GraphTarget {
  const parsed = parseGraphTarget(text);
  if ('refused' in parsed) throw new Error(`refused: ${parsed.message}`);
  return parsed;
}

function relayFor(t: TestContext, url: string, options: { timeoutMs?: number; maxAnswerBytes?: number; appSecretProof?: { appSecret: string } } = {}) {
  const relay = createGraphRelay({ baseUrl: () => url, ...options });
  t.after(() => relay.close());
  return relay;
}

function call(overrides: Partial<RelayRequest> = {}): RelayRequest {
  return { method: 'GET', target: target('v24.0/111'), accessToken: 'EAAtoken', headers: {}, maxBodyBytes: MAX_BODY_BYTES, ...overrides };
}

describe('reading a runtime path', () => {
  it('accepts a version and up to any depth of segments, keeping the raw and decoded forms', () => {
    const parsed = target('v24.0/111/messages?fields=id%2Cname&limit=5');
    assert.equal(parsed.version, 'v24.0');
    assert.deepEqual(parsed.segments, ['111', 'messages']);
    assert.equal(parsed.query, 'fields=id%2Cname&limit=5');
    assert.deepEqual(target('v24.0/%31%31%31').segments, ['111']);
    assert.deepEqual(target('v24.0/%31%31%31').rawSegments, ['%31%31%31']);
  });

  for (const [text, why] of [
    ['latest/111', 'a version of another shape'],
    ['v24/111', 'a version without its minor number'],
    ['v24.0', 'no node'],
    ['v24.0/', 'an empty node'],
    ['v24.0/111/', 'a trailing slash'],
    ['v24.0//111', 'an empty segment'],
    ['v24.0/111/..', 'a `..` segment'],
    ['v24.0/111/.', 'a `.` segment'],
    ['v24.0/%2e%2e/222', 'an encoded `..`'],
    ['v24.0/111/%2E%2e', 'an encoded `..` in mixed case'],
    ['v24.0/.%2e/222', 'a half-encoded `..`'],
    ['v24.0/111%2F..%2F222', 'an encoded slash'],
    ['v24.0/111%2f222', 'an encoded slash in lower case'],
    ['v24.0/111%5C..%5C222', 'an encoded backslash'],
    ['v24.0/111\\..\\222', 'a raw backslash'],
    ['v24.0/111%00', 'an encoded NUL'],
    ['v24.0/111%C3%28', 'a percent-escape that is not UTF-8'],
    ['v24.0/111"', 'a byte not allowed in a path'],
  ] as const) {
    it(`refuses ${why}: ${text}`, () => {
      const parsed = parseGraphTarget(text);
      assert.ok('refused' in parsed && parsed.refused === 'path', JSON.stringify(parsed));
    });
  }

  for (const query of ['access_token=EAAother', 'fields=id&ACCESS_TOKEN=x', 'access%5Ftoken=x', 'access_token[]=x', 'appsecret_proof=abc']) {
    it(`refuses a credential in the query: ${query}`, () => {
      const parsed = parseGraphTarget(`v24.0/111?${query}`);
      assert.ok('refused' in parsed && parsed.refused === 'query', JSON.stringify(parsed));
    });
  }

  it('limits bodies by type: multipart media uploads to 100 MiB, everything else to 1 MiB', () => {
    assert.equal(bodyLimitFor('multipart/form-data; boundary=x'), MAX_UPLOAD_BYTES);
    assert.equal(bodyLimitFor('application/json'), MAX_BODY_BYTES);
    assert.equal(bodyLimitFor(undefined), MAX_BODY_BYTES);
  });

  it('counts only POSTs to the number’s /messages as sends', () => {
    assert.equal(isSend('POST', target('v24.0/111/messages'), '111'), true);
    assert.equal(isSend('GET', target('v24.0/111/messages'), '111'), false);
    assert.equal(isSend('POST', target('v24.0/111/media'), '111'), false);
    assert.equal(isSend('POST', target('v24.0/222/messages'), '111'), false);
  });
});

describe('relaying a request', () => {
  it("sends the caller's path, query and bytes with the connection's token instead of the caller's credential", async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => {
      res.writeHead(200, {
        'content-type': 'application/json; charset=UTF-8',
        'facebook-api-version': 'v24.0',
        'set-cookie': 'a=b',
        'access-control-allow-origin': '*',
        'x-fb-trace-id': 'T1',
      });
      res.end('{"messages":[{"id":"wamid.1"}]}');
    });
    const relay = relayFor(t, `${provider.url}/graph`);
    const body = Buffer.from('{"messaging_product":"whatsapp", "to":"1"}');
    const answer = await relay.relay(
      call({
        method: 'POST',
        target: target('v24.0/111/messages?debug=all'),
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.length),
          authorization: 'Bearer csk_live_caller',
          cookie: 'c=d',
          'x-forwarded-for': '1.2.3.4',
          accept: 'application/json',
        },
        body: Readable.from([body]),
      }),
    );
    const [seen] = provider.seen;
    assert.equal(seen!.method, 'POST');
    assert.equal(seen!.url, '/graph/v24.0/111/messages?debug=all');
    assert.equal(seen!.headers.authorization, 'Bearer EAAtoken');
    assert.equal(seen!.headers['content-type'], 'application/json');
    assert.equal(seen!.headers.accept, 'application/json');
    assert.equal(seen!.headers.cookie, undefined);
    assert.equal(seen!.headers['x-forwarded-for'], undefined);
    assert.ok(seen!.body.equals(body), 'the bytes are the caller’s, unparsed');

    assert.equal(answer.status, 200);
    assert.equal(answer.body.toString(), '{"messages":[{"id":"wamid.1"}]}');
    assert.deepEqual(answer.headers, { 'content-type': 'application/json; charset=UTF-8', 'facebook-api-version': 'v24.0', 'x-fb-trace-id': 'T1' });
    assert.equal(answer.failure, undefined);
  });

  it('keeps percent-escapes in the path as the caller wrote them', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => res.end('{}'));
    await relayFor(t, provider.url).relay(call({ target: target('v24.0/%31%31%31?fields=a%2Cb') }));
    assert.equal(provider.seen[0]!.url, '/v24.0/%31%31%31?fields=a%2Cb');
  });

  it('adds appsecret_proof when the app requires it', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => res.end('{}'));
    await relayFor(t, provider.url, { appSecretProof: { appSecret: 'shh' } }).relay(call({ target: target('v24.0/111?fields=id') }));
    assert.match(provider.seen[0]!.url, /^\/v24\.0\/111\?fields=id&appsecret_proof=[0-9a-f]{64}$/);
  });

  it('relays an answer that is not JSON as it came', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad gateway</html>');
    });
    const answer = await relayFor(t, provider.url).relay(call());
    assert.equal(answer.status, 502);
    assert.equal(answer.headers['content-type'], 'text/html');
    assert.equal(answer.body.toString(), '<html>Bad gateway</html>');
    assert.equal(answer.failure, undefined, 'a page that is not the provider’s envelope says nothing about the token');
  });

  it('reads an expired-token answer as an auth failure, and relays it unchanged', async (t) => {
    const envelope = '{"error":{"message":"Error validating access token","type":"OAuthException","code":190,"error_subcode":463,"fbtrace_id":"F"}}';
    const provider = await fakeProvider(t, (_seen, res) => {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'OAuth "Facebook Platform" "invalid_token"' });
      res.end(envelope);
    });
    const answer = await relayFor(t, provider.url).relay(call());
    assert.equal(answer.status, 401);
    assert.equal(answer.body.toString(), envelope);
    assert.equal(answer.headers['www-authenticate'], undefined, 'the challenge is about the connection’s token, not the caller’s key');
    assert.equal(answer.failure?.category, 'auth');
    assert.equal(answer.failure?.code, 190);
  });

  it('fails with timeout when no answer comes in time', async (t) => {
    const provider = await fakeProvider(t, () => undefined);
    const started = Date.now();
    const error = await rejectionOf(relayFor(t, provider.url, { timeoutMs: 200 }).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'timeout', String(error));
    assert.ok(Date.now() - started < 2000);
  });

  it('fails with timeout when the answer’s body stops coming', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
    });
    const error = await rejectionOf(relayFor(t, provider.url, { timeoutMs: 200 }).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'timeout', String(error));
  });

  it('fails with unavailable when the provider closes the connection without answering', async (t) => {
    const provider = await fakeProvider(t, (_seen, _res, req) => req.socket.destroy());
    const error = await rejectionOf(relayFor(t, provider.url).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'unavailable', String(error));
  });

  it('fails with unavailable when the answer breaks off: half an answer is never relayed', async (t) => {
    const provider = await fakeProvider(t, (_seen, res, req) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":', () => req.socket.destroy());
    });
    const error = await rejectionOf(relayFor(t, provider.url).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'unavailable', String(error));
  });

  it('fails with unavailable when nothing listens', async (t) => {
    const provider = await fakeProvider(t, () => undefined);
    const closed = provider.url.replace(/:\d+$/, ':1');
    const error = await rejectionOf(relayFor(t, closed).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'unavailable', String(error));
  });

  it('refuses an answer larger than it relays', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.alloc(5000, 0x20));
    });
    const error = await rejectionOf(relayFor(t, provider.url, { maxAnswerBytes: 1000 }).relay(call()));
    assert.ok(error instanceof ProviderError && error.category === 'unavailable', String(error));
  });

  it('abandons the provider’s request when the body grows past the limit', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => res.end('{}'));
    async function* chunks() {
      for (let i = 0; i < 20; i++) yield Buffer.alloc(100, 0x61);
    }
    const error = await rejectionOf(relayFor(t, provider.url).relay(call({ method: 'POST', body: chunks(), maxBodyBytes: 1000 })));
    assert.ok(error instanceof RelayBodyTooLargeError, String(error));
    assert.equal(provider.seen.length, 0, 'the provider never saw a complete request');
  });

  it('abandons the provider’s request when the caller’s upload stalls', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => res.end('{}'));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    async function* stalling() {
      yield Buffer.from('{"a":');
      // Stalls until the relay has given up on it: no time to guess.
      await resumed;
      yield Buffer.from('1}');
    }
    const error = await rejectionOf(relayFor(t, provider.url, { timeoutMs: 150 }).relay(call({ method: 'POST', body: stalling() })));
    resume();
    assert.ok(error instanceof RelayUploadStalledError, String(error));
    assert.equal(provider.seen.length, 0);
  });

  it('times the answer from the end of a slow upload, not from its start', async (t) => {
    const provider = await fakeProvider(t, (_seen, res) => res.end('{"ok":true}'));
    async function* slow() {
      for (let i = 0; i < 4; i++) {
        // The scenario itself: an upload that takes 400 ms in all, longer than the 250 ms time-out.
        await new Promise((resolve) => setTimeout(resolve, 100));
        yield Buffer.from('x');
      }
    }
    const answer = await relayFor(t, provider.url, { timeoutMs: 250 }).relay(call({ method: 'POST', body: slow() }));
    assert.equal(answer.status, 200);
    assert.equal(provider.seen[0]!.body.toString(), 'xxxx');
  });
});

describe('Retry-After on a relayed throttle', () => {
  const throttle = (code: number) =>
    Buffer.from(JSON.stringify({ error: { message: `(#${code}) Rate limit`, type: 'OAuthException', code, fbtrace_id: 'F' } }));

  it('is the provider’s own estimate from its usage headers when it sent one', () => {
    const usage = JSON.stringify({ '222': [{ type: 'whatsapp', call_count: 100, total_cputime: 10, total_time: 10, estimated_time_to_regain_access: 7 }] });
    const answer = answerOf(400, { 'content-type': 'application/json', 'x-business-use-case-usage': usage }, throttle(80007));
    assert.equal(answer.status, 400, 'the status stays the provider’s');
    assert.equal(answer.headers['retry-after'], '420');
    assert.equal(answer.headers['x-business-use-case-usage'], usage);
    assert.equal(answer.failure?.category, 'throttled');
  });

  it('reads x-app-usage for the app-level limit', () => {
    const answer = answerOf(429, { 'x-app-usage': '{"call_count":100,"total_cputime":5,"total_time":5,"estimated_time_to_regain_access":2}' }, throttle(4));
    assert.equal(answer.headers['retry-after'], '120');
  });

  it('falls back to the documented wait for the code, then to one second', () => {
    assert.equal(answerOf(400, {}, throttle(130429)).headers['retry-after'], '1');
    assert.equal(answerOf(400, {}, throttle(131056)).headers['retry-after'], '6');
    assert.equal(answerOf(429, {}, Buffer.from('not json')).headers['retry-after'], '1');
  });

  it('is not added to answers that are not throttles', () => {
    assert.equal(answerOf(200, {}, Buffer.from('{}')).headers['retry-after'], undefined);
    assert.equal(answerOf(500, {}, throttle(131000)).headers['retry-after'], undefined);
    assert.equal(answerOf(400, {}, throttle(100)).headers['retry-after'], undefined);
  });
});
