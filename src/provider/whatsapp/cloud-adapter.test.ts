import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import Fastify from 'fastify';
import { request } from 'undici';
import { ManualClock } from '../../lib/clock.ts';
import { createSandboxProvider } from '../sandbox/index.ts';
import { ProviderError, providerErrorToAppError, type ProviderCredentials } from '../provider.ts';
import { createCloudProvider, type CloudProviderOptions } from './cloud-adapter.ts';
import { retryAfterSeconds } from './graph-errors.ts';

const APP_SECRET = 'test-app-secret';
const USER = '15551234567';

/** The sandbox on a loopback port, and the adapter pointed at it over real HTTP. */
async function setup(t: TestContext, overrides: Partial<CloudProviderOptions> = {}) {
  const sandbox = createSandboxProvider({ clock: new ManualClock('2026-03-01T12:00:00Z'), appSecret: APP_SECRET, autoStatus: false });
  const app = Fastify();
  await app.register(sandbox.plugin, { prefix: '/sandbox' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/sandbox`;
  const provider = createCloudProvider({ baseUrl: `${base}/graph`, version: 'v24.0', appId: 'app', appSecret: APP_SECRET, ...overrides });
  t.after(async () => {
    await provider.close();
    sandbox.close();
    await app.close();
  });

  async function control(path: string, body: unknown): Promise<any> {
    const response = await request(`${base}/control${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(response.statusCode, 200, `control ${path}`);
    return response.body.json();
  }

  async function connect(): Promise<ProviderCredentials> {
    const exchanged = await provider.exchangeCode('signup-code');
    assert.ok(exchanged.wabaId !== undefined && exchanged.phoneNumberId !== undefined);
    return { accessToken: exchanged.accessToken, wabaId: exchanged.wabaId, phoneNumberId: exchanged.phoneNumberId };
  }

  /** The user writes first, which opens the 24-hour window; answers the inbound wamid. */
  async function userWrites(credentials: ProviderCredentials): Promise<string> {
    const answer = await control('/inbound', { phone_number_id: credentials.phoneNumberId, from: USER, type: 'text', text: 'hi' });
    return answer.message_id as string;
  }

  const failNext = (failure: { code: number; http_status?: number }) => control('/behaviour', { fail_next: failure });

  return { provider, sandbox, control, connect, userWrites, failNext };
}

/** A throwaway loopback server that misbehaves as told; answers the adapter's base URL. */
async function startServer(t: TestContext, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const someCredentials: ProviderCredentials = { accessToken: 'token', phoneNumberId: '123', wabaId: '456' };

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the call to fail');
}

describe('the cloud adapter against the sandbox: happy path', () => {
  it('exchanging a code finds the token, the account and its one number the provider way', async (t) => {
    const { provider, sandbox } = await setup(t);
    const exchanged = await provider.exchangeCode('signup-code');
    const [number] = [...sandbox.state.numbers.values()];
    assert.ok(number !== undefined);
    assert.equal(typeof exchanged.accessToken, 'string');
    assert.equal(exchanged.wabaId, number.wabaId);
    assert.equal(exchanged.phoneNumberId, number.phoneNumberId);
  });

  it('sending a text inside the window answers the wamid and the resolved wa_id', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    await userWrites(credentials);
    const sent = await provider.sendMessage(credentials, { to: `+${USER}`, type: 'text', text: 'hello', callbackData: 'order-1' });
    assert.match(sent.providerMessageId, /^wamid\./);
    assert.equal(sent.recipientWaId, USER);
  });

  it('a template is accepted outside the window', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const sent = await provider.sendMessage(credentials, { to: USER, type: 'template', name: 'hello_world', language: 'en_US', bodyParameters: ['Ada'] });
    assert.match(sent.providerMessageId, /^wamid\./);
  });

  it('marking an inbound message read and showing typing both succeed', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    const inbound = await userWrites(credentials);
    await provider.markRead(credentials, inbound);
    await provider.sendTyping(credentials, inbound);
  });

  it('reading the phone number answers it in the domain words', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const info = await provider.getPhoneNumber(credentials);
    assert.equal(info.phoneNumberId, credentials.phoneNumberId);
    assert.match(info.displayPhoneNumber, /^\+1 /);
    assert.equal(info.qualityRating, 'GREEN');
    assert.equal(info.throughputLevel, 'STANDARD');
    assert.equal(info.messagingLimitTier, 'TIER_250');
    assert.equal(typeof info.verifiedName, 'string');
  });

  it('appsecret_proof is sent only when configured, as HMAC-SHA256 of the token', async (t) => {
    const seen: string[] = [];
    const base = await startServer(t, (req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true }));
    });
    const plain = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    const proving = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, appSecretProof: true });
    t.after(async () => Promise.all([plain.close(), proving.close()]));
    await plain.subscribeApp(someCredentials);
    await proving.subscribeApp(someCredentials);
    assert.equal(seen[0], '/v24.0/456/subscribed_apps');
    const expected = createHmac('sha256', APP_SECRET).update('token').digest('hex');
    assert.equal(seen[1], `/v24.0/456/subscribed_apps?appsecret_proof=${expected}`);
  });
});

describe('the cloud adapter against the sandbox: provider errors', () => {
  it('a token the provider does not know is an auth failure, mapped to connection_needs_reauth', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejection(provider.sendMessage({ ...credentials, accessToken: 'revoked' }, { to: USER, type: 'text', text: 'x' }));
    assert.equal(error.category, 'auth');
    assert.equal(error.code, 190);
    assert.equal(error.httpStatus, 401);
    assert.equal(error.retryable, false);
    assert.equal(typeof error.traceId, 'string');
    assert.equal(providerErrorToAppError(error).code, 'connection_needs_reauth');
  });

  it('a free-form message outside the window is rejected for good, keeping the provider code', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejection(provider.sendMessage(credentials, { to: USER, type: 'text', text: 'late' }));
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 131047);
    assert.equal(error.retryable, false);
    assert.equal(error.retryAfterSeconds, undefined);
    const appError = providerErrorToAppError(error);
    assert.equal(appError.code, 'provider_rejected');
    assert.equal(appError.status, 502);
    const provided = appError.extra.provider as Record<string, unknown>;
    assert.equal(provided.code, 131047);
    assert.equal(provided.trace_id, error.traceId);
    assert.match(String(provided.message), /^\(#131047\) /);
  });

  it('an unknown phone number id is rejected with code 100 and its subcode', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejection(provider.getPhoneNumber({ ...credentials, phoneNumberId: '999' }));
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 100);
    assert.equal(error.subcode, 33);
  });

  it('throughput limit 130429 is throttled and retryable after at least a second', async (t) => {
    const { provider, connect, userWrites, failNext } = await setup(t);
    const credentials = await connect();
    await userWrites(credentials);
    await failNext({ code: 130429 });
    const error = await rejection(provider.sendMessage(credentials, { to: USER, type: 'text', text: 'x' }));
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, 400);
    assert.ok(error.retryAfterSeconds !== undefined && error.retryAfterSeconds >= 1);
    const appError = providerErrorToAppError(error);
    assert.equal(appError.code, 'provider_throttled');
    assert.equal(appError.headers['retry-after'], String(error.retryAfterSeconds));
  });

  it('the pair rate limit 131056 waits six seconds', async (t) => {
    const { provider, connect, failNext } = await setup(t);
    const credentials = await connect();
    await failNext({ code: 131056 });
    const error = await rejection(provider.markRead(credentials, 'wamid.x'));
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryAfterSeconds, 6);
  });

  it('131000 on HTTP 500 is a retryable unavailability mapped to provider_unavailable', async (t) => {
    const { provider, connect, failNext } = await setup(t);
    const credentials = await connect();
    await failNext({ code: 131000, http_status: 500 });
    const error = await rejection(provider.getPhoneNumber(credentials));
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.code, 131000);
    assert.equal(error.httpStatus, 500);
    assert.equal(providerErrorToAppError(error).code, 'provider_unavailable');
  });

  it('a wrong app secret during the exchange is rejected, not retried (code 1 on a 4xx)', async (t) => {
    const { provider } = await setup(t, { appSecret: 'wrong' });
    const error = await rejection(provider.exchangeCode('signup-code'));
    assert.equal(error.code, 1);
    assert.equal(error.category, 'rejected');
    assert.equal(error.retryable, false);
  });

  it('subscribing the app is refused by the sandbox, which does not implement subscribed_apps yet', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejection(provider.subscribeApp(credentials));
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 100);
  });
});

describe('the cloud adapter: transport faults', () => {
  it('an answer that is not JSON is unavailable and retryable', async (t) => {
    const base = await startServer(t, (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>'));
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 1000 });
    t.after(() => provider.close());
    const error = await rejection(provider.getPhoneNumber(someCredentials));
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, 502);
    assert.equal(providerErrorToAppError(error).code, 'provider_unavailable');
  });

  it('a socket closed before any answer is unavailable and retryable', async (t) => {
    const base = await startServer(t, (req) => req.socket.destroy());
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 1000 });
    t.after(() => provider.close());
    const error = await rejection(provider.sendMessage(someCredentials, { to: USER, type: 'text', text: 'x' }));
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, undefined);
  });

  it('a server that never answers times out after timeoutMs, mapped to provider_timeout', async (t) => {
    const base = await startServer(t, () => undefined);
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 200 });
    t.after(() => provider.close());
    const started = Date.now();
    const error = await rejection(provider.markRead(someCredentials, 'wamid.x'));
    assert.ok(Date.now() - started < 2000);
    assert.equal(error.category, 'timeout');
    assert.equal(error.retryable, true);
    assert.equal(providerErrorToAppError(error).code, 'provider_timeout');
  });

  it('nothing listening on the port is unavailable', async (t) => {
    const base = await startServer(t, () => undefined);
    const closedPort = base.replace(/:\d+$/, ':1');
    const provider = createCloudProvider({ baseUrl: closedPort, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 500 });
    t.after(() => provider.close());
    const error = await rejection(provider.getPhoneNumber(someCredentials));
    assert.equal(error.category, 'unavailable');
  });

  it('a 5xx JSON answer without the Graph envelope is unavailable', async (t) => {
    const base = await startServer(t, (_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"down"}'));
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    t.after(() => provider.close());
    const error = await rejection(provider.getPhoneNumber(someCredentials));
    assert.equal(error.category, 'unavailable');
    assert.equal(error.httpStatus, 503);
  });
});

describe('the cloud adapter: Retry-After from usage headers', () => {
  it('a WABA rate limit waits the minutes the business-use-case header estimates', async (t) => {
    const usage = JSON.stringify({ '456': [{ type: 'whatsapp_business_management', call_count: 100, total_cputime: 10, total_time: 10, estimated_time_to_regain_access: 7 }] });
    const base = await startServer(t, (_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json', 'x-business-use-case-usage': usage })
        .end(JSON.stringify({ error: { message: '(#80007) Rate limit issues', type: 'OAuthException', code: 80007, fbtrace_id: 'trace-1' } })),
    );
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    t.after(() => provider.close());
    const error = await rejection(provider.subscribeApp(someCredentials));
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryAfterSeconds, 420);
    assert.equal(error.traceId, 'trace-1');
    assert.equal(providerErrorToAppError(error).headers['retry-after'], '420');
  });

  it('without a usage estimate, each code falls back to its documented wait', () => {
    assert.equal(retryAfterSeconds(130429, 'throttled', {}), 1);
    assert.equal(retryAfterSeconds(131056, 'throttled', {}), 6);
    assert.equal(retryAfterSeconds(4, 'throttled', { 'x-app-usage': '{"call_count":100,"total_cputime":5,"total_time":5}' }), 60);
    assert.equal(retryAfterSeconds(131057, 'unavailable', {}), 60);
    assert.equal(retryAfterSeconds(131000, 'unavailable', {}), undefined);
    assert.equal(retryAfterSeconds(4, 'throttled', { 'x-app-usage': '{"call_count":100,"estimated_time_to_regain_access":2}' }), 120);
    assert.equal(retryAfterSeconds(131047, 'rejected', { 'retry-after': '30' }), undefined);
    assert.equal(retryAfterSeconds(2, 'unavailable', { 'retry-after': '30' }), 30);
  });
});
