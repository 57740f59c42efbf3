import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { before, describe, it } from 'node:test';
import { assertError, createConnection, createKey, signUp, startServerWithOwner, type SignedUp } from '../../../test/factories.ts';
import { startServer, suiteScope, type Scope, type TestServer } from '../../../test/harness.ts';

/**
 * The runtime surface end to end: a listening service, its sandbox provider at /sandbox, and for the
 * faults no provider would produce on request, a throwaway loopback provider in front of that sandbox.
 */

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: any;
}

/**
 * A request with its target sent exactly as written: fetch would resolve `..` and `%2e%2e` before
 * sending, which is the very thing these tests must get past the client.
 */
function raw(
  baseUrl: string,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: Buffer | string; chunks?: Buffer[] } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: hostname, port, method, path: target, headers: options.headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        if ((response.headers['content-type'] ?? '').includes('json') && text) body = JSON.parse(text);
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, body });
      });
    });
    outgoing.on('error', reject);
    if (options.chunks) {
      for (const chunk of options.chunks) outgoing.write(chunk);
      outgoing.end();
    } else outgoing.end(options.body);
  });
}

/** assertError reads fetch's Headers; raw responses carry node's. */
function assertRawError(response: RawResponse, status: number, code: string) {
  return assertError({ ...response, headers: new Headers(response.headers as Record<string, string>) }, status, code);
}

async function control(server: TestServer, path: string, body: unknown) {
  const response = await server.request('POST', `/sandbox/control/${path}`, { body });
  assert.ok(response.status < 300, `sandbox control ${path}: ${response.text}`);
  return response.body;
}

/** The connection's business token, read the way the service reads it: to call the sandbox directly. */
async function businessToken(server: TestServer, organizationId: string, connectionId: string): Promise<string> {
  const access = await server.app.services.connections.providerAccess(
    { kind: 'connection_key', credentialId: 'key_test', organizationId, memberId: null, role: null, mode: 'live', connectionId, scopes: new Set() },
    connectionId,
  );
  return access.credentials.accessToken;
}

async function runtimeKey(server: TestServer, owner: SignedUp, connectionId: string, options: { mode?: 'live' | 'test'; scopes?: string[] } = {}) {
  const key = await createKey(server, owner.token, {
    kind: 'connection',
    mode: options.mode ?? 'live',
    connection_id: connectionId,
    ...(options.scopes ? { scopes: options.scopes } : {}),
  });
  return key.key;
}

describe('the runtime surface', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string; waba_id: string };
  let other: { id: string; phone_number_id: string; waba_id: string };
  let key: string;

  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    connection = await createConnection(server, owner);
    other = await createConnection(server, owner, { name: 'Sales line' });
    key = await runtimeKey(server, owner, connection.id);
  });

  const get = (path: string, token = key) => server.request('GET', path, { token });

  describe('happy paths', () => {
    it("GET /{phone_number_id} answers the provider's number node byte for byte, with the headers that matter", async () => {
      const relayed = await get(`/runtime/v24.0/${connection.phone_number_id}`);
      const token = await businessToken(server, owner.organizationId, connection.id);
      const direct = await server.request('GET', `/sandbox/graph/v24.0/${connection.phone_number_id}`, { token });
      assert.equal(relayed.status, 200, relayed.text);
      assert.equal(relayed.text, direct.text, 'the same bytes as the provider sends');
      assert.equal(relayed.body.id, connection.phone_number_id);
      for (const name of ['content-type', 'facebook-api-version', 'cache-control']) assert.equal(relayed.headers.get(name), direct.headers.get(name), name);
      for (const name of ['x-fb-trace-id', 'x-fb-request-id', 'x-business-use-case-usage']) assert.ok(relayed.headers.get(name), `${name} is relayed`);
      assert.equal(relayed.headers.get('access-control-allow-origin'), null, "the provider's CORS policy is not ours");
      assert.ok(!relayed.text.includes(token) && ![...relayed.headers.values()].some((value) => value.includes(token)), 'the business token never comes back');
      assert.match(relayed.headers.get('x-request-id') ?? '', /^req_/);
      assert.equal(relayed.headers.get('x-ratelimit-limit'), '200');
      assert.ok(relayed.headers.get('x-ratelimit-remaining'));
    });

    it('relays the query string, and the version as given', async () => {
      const relayed = await get(`/runtime/v23.0/${connection.phone_number_id}?fields=id,quality_rating`);
      assert.equal(relayed.status, 200, relayed.text);
      assert.deepEqual(Object.keys(relayed.body).sort(), ['id', 'quality_rating']);
      assert.equal(relayed.headers.get('facebook-api-version'), 'v23.0');
    });

    it('addresses the business account too: GET /{waba_id} and its phone numbers', async () => {
      const account = await get(`/runtime/v24.0/${connection.waba_id}`);
      assert.equal(account.status, 200, account.text);
      assert.equal(account.body.id, connection.waba_id);
      const numbers = await get(`/runtime/v24.0/${connection.waba_id}/phone_numbers`);
      assert.equal(numbers.status, 200, numbers.text);
      assert.ok(numbers.body.data.some((number: { id: string }) => number.id === connection.phone_number_id));
    });

    it('POST /{phone_number_id}/messages sends a message, which the provider records', async () => {
      await control(server, 'inbound', { phone_number_id: connection.phone_number_id, from: '15551230001', type: 'text', text: 'hello' });
      const sent = await server.request('POST', `/runtime/v24.0/${connection.phone_number_id}/messages`, {
        token: key,
        body: { messaging_product: 'whatsapp', to: '15551230001', type: 'text', text: { body: 'sent through the runtime' } },
      });
      assert.equal(sent.status, 200, sent.text);
      const wamid: string = sent.body.messages[0].id;
      assert.match(wamid, /^wamid\./);
      assert.ok(sent.headers.get('x-business-use-case-usage'), 'usage headers are relayed');
      // The provider knows the message: it accepts a status for it.
      await control(server, 'status', { message_id: wamid, status: 'delivered' });
    });

    it("relays the provider's own refusal of a send as it came (status and envelope)", async () => {
      const refused = await server.request('POST', `/runtime/v24.0/${connection.phone_number_id}/messages`, {
        token: key,
        body: { messaging_product: 'whatsapp', to: '15551230002', type: 'text', text: { body: 'outside the window' } },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error.code, 131047);
      assert.equal(refused.body.error.type, 'OAuthException');
    });

    it('uploads media as multipart, the bytes relayed with their boundary', async () => {
      const form = new FormData();
      form.set('messaging_product', 'whatsapp');
      form.set('type', 'image/png');
      form.set('file', new Blob([Buffer.from('89504e470d0a1a0a0000', 'hex')], { type: 'image/png' }), 'dot.png');
      const response = await fetch(`${server.url}/runtime/v24.0/${connection.phone_number_id}/media`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      const body = (await response.json()) as { id: string };
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.match(body.id, /^\d+$/);
      // Media ids are not addressable in this version of the runtime: only the number and the account are.
      assertError(await server.request('GET', `/runtime/v24.0/${body.id}`, { token: key }), 404, 'resource_not_found');
    });

    it('a test key relays for a test connection, and so does a live key bound to one', async () => {
      const testConnection = await createConnection(server, owner, { test: true });
      const testKey = await runtimeKey(server, owner, testConnection.id, { mode: 'test' });
      const relayed = await get(`/runtime/v24.0/${testConnection.phone_number_id}`, testKey);
      assert.equal(relayed.status, 200, relayed.text);
      const liveKey = await runtimeKey(server, owner, testConnection.id, { mode: 'live' });
      const relayedLive = await get(`/runtime/v24.0/${testConnection.phone_number_id}`, liveKey);
      assert.equal(relayedLive.status, 200, relayedLive.text);
    });
  });

  describe('who may call', () => {
    it('an organization key is refused with credential_kind_not_allowed', async () => {
      const organizationKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      const error = assertError(await get(`/runtime/v24.0/${connection.phone_number_id}`, organizationKey.key), 403, 'credential_kind_not_allowed');
      assert.deepEqual(error.allowed_credentials, ['connection_key']);
    });

    it('a dashboard token is refused with credential_kind_not_allowed', async () => {
      assertError(await get(`/runtime/v24.0/${connection.phone_number_id}`, owner.token), 403, 'credential_kind_not_allowed');
    });

    it('a connection key without runtime:proxy is refused with scope_missing', async () => {
      const narrow = await runtimeKey(server, owner, connection.id, { scopes: ['messages:read'] });
      const error = assertError(await get(`/runtime/v24.0/${connection.phone_number_id}`, narrow), 403, 'scope_missing');
      assert.equal(error.required_scope, 'runtime:proxy');
    });

    it('no credential is credential_missing', async () => {
      assertError(await server.request('GET', `/runtime/v24.0/${connection.phone_number_id}`), 401, 'credential_missing');
    });
  });

  describe('what a path may address', () => {
    it("another connection's phone number id is 404, as if it did not exist", async () => {
      assertError(await get(`/runtime/v24.0/${other.phone_number_id}`), 404, 'resource_not_found');
      assertError(await get(`/runtime/v24.0/${other.phone_number_id}/messages`), 404, 'resource_not_found');
    });

    it("another business account's id is 404", async () => {
      assertError(await get(`/runtime/v24.0/${other.waba_id}/message_templates`), 404, 'resource_not_found');
    });

    for (const [path, why] of [
      ['/runtime/v24.0/{pn}/../{other}', '`..`'],
      ['/runtime/v24.0/{pn}/..', 'a trailing `..`'],
      ['/runtime/v24.0/%2e%2e/{other}', '`%2e%2e`'],
      ['/runtime/v24.0/{pn}/%2E%2e', '`%2E%2e` in mixed case'],
      ['/runtime/v24.0/{pn}%2F..%2F{other}', '`%2F`'],
      ['/runtime/v24.0/{pn}%2fmessages', '`%2f`'],
      ['/runtime/v24.0/{pn}%5C..%5C{other}', '`%5C`'],
      ['/runtime/v24.0/{pn}/.', '`.`'],
      ['/runtime/v24.0/{pn}/', 'a trailing slash'],
      ['/runtime/v24.0//{pn}', 'an empty segment'],
      ['/runtime/latest/{pn}', 'an unknown version shape'],
      ['/runtime/24.0/{pn}', 'a version without its v'],
      ['/runtime/v24.0.1/{pn}', 'a version with three numbers'],
    ] as const) {
      it(`refuses ${why} with 404: ${path}`, async () => {
        const target = path.replace('{pn}', connection.phone_number_id).replace('{other}', other.phone_number_id);
        const response = await raw(server.url, 'GET', target, { headers: { authorization: `Bearer ${key}` } });
        assertRawError(response, 404, 'resource_not_found');
        assert.equal(response.headers['x-ratelimit-limit'], '200', "charged to the key's bucket like any request");
      });
    }

    it('refuses a path deeper than the provider’s paths for a number go with 404', async () => {
      const response = await raw(server.url, 'GET', `/runtime/v24.0/${connection.phone_number_id}/a/b/c`, { headers: { authorization: `Bearer ${key}` } });
      assertRawError(response, 404, 'route_not_found');
    });

    it('a malformed percent-escape is refused by the router with 404', async () => {
      const response = await raw(server.url, 'GET', `/runtime/v24.0/${connection.phone_number_id}%zz`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(response.status, 404, response.text);
      assert.equal(response.body.error.code, 'route_not_found');
    });

    it('refuses access_token in the query with validation_failed: the runtime supplies the token', async () => {
      const error = assertError(await get(`/runtime/v24.0/${connection.phone_number_id}?fields=id&access_token=EAAsomeoneelse`), 400, 'validation_failed');
      assert.equal(error.param, '/query/access_token');
    });

    it('refuses an Idempotency-Key with validation_failed: the runtime keeps no record to replay', async () => {
      const response = await server.request('POST', `/runtime/v24.0/${connection.phone_number_id}/messages`, {
        token: key,
        headers: { 'idempotency-key': 'k1' },
        body: { messaging_product: 'whatsapp', to: '15551230001', type: 'text', text: { body: 'x' } },
      });
      const error = assertError(response, 400, 'validation_failed');
      assert.equal(error.param, '/header/idempotency-key');
    });

    it('takes GET, POST and DELETE only', async () => {
      const response = await server.request('PUT', `/runtime/v24.0/${connection.phone_number_id}`, { token: key, body: {} });
      assertError(response, 405, 'method_not_allowed');
      assert.equal(response.headers.get('allow'), 'GET, POST, DELETE');
    });
  });

  describe('bodies', () => {
    it('a body declared over the limit is body_too_large before anything is sent', async () => {
      const response = await raw(server.url, 'POST', `/runtime/v24.0/${connection.phone_number_id}/messages`, {
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: Buffer.alloc(1024 * 1024 + 1, 0x20),
      });
      assertRawError(response, 413, 'body_too_large');
      assert.equal(response.headers.connection, 'close', 'the unread upload is not drained to keep the connection');
    });

    it('a chunked body that grows past the limit is body_too_large, and the provider request is abandoned', async () => {
      const response = await raw(server.url, 'POST', `/runtime/v24.0/${connection.phone_number_id}/messages`, {
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        chunks: Array.from({ length: 20 }, () => Buffer.alloc(64 * 1024, 0x20)),
      });
      assertRawError(response, 413, 'body_too_large');
    });

    it('a multipart upload may be larger than a JSON body', async () => {
      const form = new FormData();
      form.set('messaging_product', 'whatsapp');
      form.set('type', 'image/jpeg');
      form.set('file', new Blob([Buffer.alloc(2 * 1024 * 1024, 0xff)], { type: 'image/jpeg' }), 'big.jpg');
      const response = await fetch(`${server.url}/runtime/v24.0/${connection.phone_number_id}/media`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      assert.equal(response.status, 200, await response.text());
    });
  });

  describe("the provider's throttles and failures", () => {
    it('a throttle is relayed with its status and body, and a Retry-After from the usage headers', async () => {
      await control(server, 'behaviour', { throttle: { code: 80007, estimated_time_to_regain_access: 5, calls: 1 } });
      const response = await get(`/runtime/v24.0/${connection.waba_id}/phone_numbers`);
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error.code, 80007);
      assert.equal(response.headers.get('retry-after'), '300');
      const usage = JSON.parse(response.headers.get('x-business-use-case-usage') ?? '{}');
      assert.equal(usage[connection.waba_id][0].estimated_time_to_regain_access, 5);
    });

    it('a provider 429 is relayed as a 429 with the provider’s payload and a Retry-After', async () => {
      await control(server, 'behaviour', { fail_next: { code: 4, http_status: 429 } });
      const response = await get(`/runtime/v24.0/${connection.phone_number_id}`);
      assert.equal(response.status, 429, response.text);
      assert.equal(response.body.error.code, 4, "the provider's envelope, not ours");
      assert.equal(response.body.error.type, 'OAuthException');
      assert.ok(Number(response.headers.get('retry-after')) >= 1);
    });

    it('a provider 500 is relayed as it came', async () => {
      await control(server, 'behaviour', { fail_next: { code: 131000, http_status: 500 } });
      const response = await get(`/runtime/v24.0/${connection.phone_number_id}`);
      assert.equal(response.status, 500, response.text);
      assert.equal(response.body.error.code, 131000);
      assert.ok(response.headers.get('x-fb-trace-id'));
    });

    it('an expired token is relayed, turns the connection needs_reauth, and later calls are connection_needs_reauth', async () => {
      const expiring = await createConnection(server, owner, { name: 'Expiring' });
      const expiringKey = await runtimeKey(server, owner, expiring.id);
      await control(server, 'revoke-token', { waba_id: expiring.waba_id });
      const response = await get(`/runtime/v24.0/${expiring.phone_number_id}`, expiringKey);
      assert.equal(response.status, 401, response.text);
      assert.equal(response.body.error.code, 190);
      assert.equal(response.headers.get('www-authenticate'), null);
      const stored = await server.request('GET', `/v1/connections/${expiring.id}`, { token: owner.token });
      assert.equal(stored.body.status, 'needs_reauth');
      assertError(await get(`/runtime/v24.0/${expiring.phone_number_id}`, expiringKey), 409, 'connection_needs_reauth');
    });

    it('a disconnected connection is connection_inactive', async () => {
      const gone = await createConnection(server, owner, { name: 'Gone' });
      const goneKey = await runtimeKey(server, owner, gone.id);
      const deleted = await server.request('DELETE', `/v1/connections/${gone.id}`, { token: owner.token });
      assert.equal(deleted.status, 200, deleted.text);
      assertError(await get(`/runtime/v24.0/${gone.phone_number_id}`, goneKey), 409, 'connection_inactive');
    });
  });

  describe('rate limits', () => {
    it("runtime calls spend the key's bucket, and an empty bucket is rate_limited in our envelope", async () => {
      const limited = await runtimeKey(server, owner, connection.id);
      // Refused paths cost no provider call but are charged like any request.
      for (let i = 0; i < 200; i++) {
        const response = await get(`/runtime/latest/${connection.phone_number_id}`, limited);
        assert.equal(response.status, 404);
        assert.equal(response.headers.get('x-ratelimit-remaining'), String(199 - i));
      }
      const refused = await get(`/runtime/v24.0/${connection.phone_number_id}`, limited);
      assertError(refused, 429, 'rate_limited');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    });
  });
});

/**
 * A provider that forwards to the service's own sandbox, except for the one fault it is told to
 * produce next: no answer, a closed socket, a page that is not JSON, an answer cut short.
 */
type Fault = 'hang' | 'close' | 'html' | 'cut';

/** Closed when `scope` ends. */
async function faultyProvider(scope: Scope) {
  let target = '';
  let next: Fault | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const fault = next;
      next = undefined;
      if (fault === 'hang') return;
      if (fault === 'close') {
        req.socket.destroy();
        return;
      }
      if (fault === 'html') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<html><body>Service temporarily overloaded</body></html>');
        return;
      }
      if (fault === 'cut') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        res.write('{"id":"', () => req.socket.destroy());
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${target}${req.url ?? ''}`, { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) }).then(
        async (response) => {
          const out: Record<string, string> = {};
          response.headers.forEach((value, name) => {
            if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'content-encoding'].includes(name)) out[name] = value;
          });
          res.writeHead(response.status, out).end(Buffer.from(await response.arrayBuffer()));
        },
        () => res.destroy(),
      );
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  scope.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwardTo(url: string) {
      target = url;
    },
    failNext(fault: Fault) {
      next = fault;
    },
  };
}

describe('the runtime surface when the provider gives no answer', () => {
  let provider: Awaited<ReturnType<typeof faultyProvider>>;
  let sandboxHost: TestServer;
  let server: TestServer;
  let pn: string;
  let key: string;

  const suite = suiteScope();
  before(async () => {
    provider = await faultyProvider(suite);
    // The sandbox is another process's on the same store (and master key), as in a deployment of
    // several: a process given a PROVIDER_BASE_URL mounts none of its own.
    sandboxHost = await startServer(suite);
    provider.forwardTo(`${sandboxHost.url}/sandbox/graph`);
    server = await startServer(suite, { shareStore: sandboxHost.testStore, env: { PROVIDER_BASE_URL: provider.url } });
    const owner = await signUp(server);
    const connection = await createConnection(server, owner);
    pn = connection.phone_number_id;
    key = await runtimeKey(server, owner, connection.id);
  });

  it('a process given a PROVIDER_BASE_URL mounts no sandbox of its own: there is one sandbox, the host’s', async () => {
    assertError(await server.request('GET', '/sandbox/control/behaviour'), 404, 'route_not_found');
    assert.equal((await sandboxHost.request('GET', '/sandbox/control/behaviour')).status, 200);
  });

  it('relays through the configured provider base URL', async () => {
    const response = await server.request('GET', `/runtime/v24.0/${pn}`, { token: key });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.id, pn);
  });

  it('an answer that is not JSON is still an answer: relayed as it came', async () => {
    provider.failNext('html');
    const response = await server.request('GET', `/runtime/v24.0/${pn}`, { token: key });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(response.text, '<html><body>Service temporarily overloaded</body></html>');
  });

  it('a closed socket is provider_unavailable (502) in our envelope', async () => {
    provider.failNext('close');
    const error = assertError(await server.request('GET', `/runtime/v24.0/${pn}`, { token: key }), 502, 'provider_unavailable');
    assert.equal(error.retryable, true);
  });

  it('an answer cut short is provider_unavailable: half an answer is never relayed', async () => {
    provider.failNext('cut');
    assertError(await server.request('GET', `/runtime/v24.0/${pn}`, { token: key }), 502, 'provider_unavailable');
  });

  // Waits out the relay's real time limit (10 s): the harness takes the service's own settings.
  it('no answer in time is provider_timeout (504) in our envelope', async () => {
    provider.failNext('hang');
    const started = Date.now();
    const error = assertError(
      await server.request('POST', `/runtime/v24.0/${pn}/messages`, { token: key, body: { messaging_product: 'whatsapp' } }),
      504,
      'provider_timeout',
    );
    assert.equal(error.retryable, true);
    assert.ok(Date.now() - started >= 9_000);
  });
});
