import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { ManualClock } from '../../lib/clock.ts';
import { startServer } from '../../../test/harness.ts';
import { APP_SECRET, sandboxStore, startReceiver, USER, V } from './harness.test.ts';
import { createSandboxProvider, type SandboxProviderOptions } from './index.ts';

const ACCESS = { public: true, reason: 'the sandbox provider answers for itself', rateLimit: false } as const;

/**
 * A host shaped like the service: every route must declare `config.access`, failures and unknown
 * paths answer in the host's own envelope, the host compiles schemas its own way and parses JSON
 * with a parser of its own, and text bodies are not accepted at all.
 */
function createHost() {
  const app = Fastify();
  const routes: { method: string; url: string; config: unknown }[] = [];
  app.addHook('onRoute', (route) => {
    const config = route.config as { access?: unknown } | undefined;
    if (config?.access === undefined) throw new Error(`route ${String(route.method)} ${route.url} declares no access rule`);
    routes.push({ method: String(route.method), url: route.url, config });
  });
  app.setErrorHandler((error: Error, _request, reply) => reply.status(418).send({ host_error: error.message }));
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ host_not_found: true }));
  app.setValidatorCompiler(() => {
    throw new Error('the host validator compiler must not be asked to compile sandbox schemas');
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, _body, done) => {
    done(Object.assign(new Error('the host JSON parser refuses everything'), { statusCode: 400 }), undefined);
  });
  app.post('/host-echo', { config: { access: ACCESS } }, async (req) => req.body);
  return { app, routes };
}

async function mount(t: TestContext, app: FastifyInstance, options: Partial<SandboxProviderOptions>) {
  const receiver = await startReceiver(t);
  // As the service does: its own address is known only once it listens, so the URL is a function.
  const sandbox = createSandboxProvider({
    store: await sandboxStore(t),
    clock: new ManualClock('2026-03-01T12:00:00Z'),
    appSecret: APP_SECRET,
    webhookUrl: () => receiver.url,
    ...options,
  });
  await app.register(sandbox.plugin, { prefix: '/sandbox' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    sandbox.close();
    await app.close();
  });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  async function call(method: 'GET' | 'POST', path: string, body?: string, headers: Record<string, string> = {}) {
    const response = await request(`${origin}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body }),
    });
    return { status: response.statusCode, body: (await response.body.json()) as any };
  }
  return { sandbox, receiver, call };
}

describe('the sandbox mounted inside a host application', () => {
  it('without routeConfig a host that requires access declarations refuses to start', async (t) => {
    const { app } = createHost();
    const sandbox = createSandboxProvider({ store: await sandboxStore(t), clock: new ManualClock(), appSecret: APP_SECRET });
    t.after(async () => {
      sandbox.close();
      await app.close();
    });
    await assert.rejects(async () => {
      await app.register(sandbox.plugin, { prefix: '/sandbox' });
      await app.ready();
    }, /declares no access rule/);
  });

  it('routeConfig is merged into every sandbox route, so the host accepts them all', async (t) => {
    const { app, routes } = createHost();
    await mount(t, app, { routeConfig: { access: ACCESS } });
    const sandboxRoutes = routes.filter((route) => route.url.startsWith('/sandbox/'));
    assert.ok(sandboxRoutes.some((route) => route.url.startsWith('/sandbox/graph/')));
    assert.ok(sandboxRoutes.some((route) => route.url.startsWith('/sandbox/control/')));
    for (const route of sandboxRoutes) assert.deepEqual(route.config, { access: ACCESS }, `${route.method} ${route.url}`);
  });

  it('Graph calls answer in the provider shapes: the sandbox parses its own JSON and errors are Graph envelopes', async (t) => {
    const { app } = createHost();
    const { call, receiver, sandbox } = await mount(t, app, { routeConfig: { access: ACCESS } });
    const exchange = await call('GET', `/sandbox${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=c`);
    assert.equal(exchange.status, 200);
    const token = exchange.body.access_token as string;
    const { waba_id: wabaId, phone_number_id: phoneNumberId } = exchange.body.sandbox;
    const auth = { authorization: `Bearer ${token}` };
    assert.deepEqual((await call('POST', `/sandbox${V}/${wabaId}/subscribed_apps`, '{}', auth)).body, { success: true });
    await call('POST', '/sandbox/control/inbound', JSON.stringify({ phone_number_id: phoneNumberId, from: USER, type: 'text', text: 'hi' }));
    const sent = await call(
      'POST',
      `/sandbox${V}/${phoneNumberId}/messages`,
      JSON.stringify({ messaging_product: 'whatsapp', to: USER, text: { body: 'hello' } }),
      auth,
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.match(sent.body.messages[0].id, /^wamid\./);
    await sandbox.idle();
    assert.ok(receiver.received.length >= 4, 'the inbound webhook and the status walk reached the receiver');

    const badJson = await call('POST', `/sandbox${V}/${phoneNumberId}/messages`, '{nope', auth);
    assert.equal(badJson.status, 400);
    assert.equal(badJson.body.error.code, 100);
    const badToken = await call('GET', `/sandbox${V}/${phoneNumberId}`, undefined, { authorization: 'Bearer nope' });
    assert.equal(badToken.status, 401);
    assert.equal(badToken.body.error.code, 190);
    const unknownPath = await call('GET', `/sandbox${V}/${phoneNumberId}/no/such/path`, undefined, auth);
    assert.equal(unknownPath.status, 400);
    assert.equal(unknownPath.body.error.type, 'OAuthException');
    const textBody = await call('POST', `/sandbox${V}/${phoneNumberId}/messages`, 'hi', { ...auth, 'content-type': 'text/plain' });
    assert.equal(textBody.status, 400);
    assert.equal(textBody.body.error.code, 100);
  });

  it('control calls answer in the control envelope, other sandbox paths too; the host keeps its own answers', async (t) => {
    const { app } = createHost();
    const { call } = await mount(t, app, { routeConfig: { access: ACCESS } });
    const invalid = await call('POST', '/sandbox/control/inbound', JSON.stringify({ type: 'text' }));
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.code, 'validation_failed');
    assert.ok(Array.isArray(invalid.body.error.details));
    const malformed = await call('POST', '/sandbox/control/behaviour', '{nope');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'malformed_json');
    const behaviour = await call('POST', '/sandbox/control/behaviour', JSON.stringify({ latency_ms: 0 }));
    assert.equal(behaviour.status, 200);
    const unknownControl = await call('GET', '/sandbox/control/nothing');
    assert.equal(unknownControl.status, 404);
    assert.equal(unknownControl.body.error.code, 'route_not_found');
    const unknownSandbox = await call('GET', '/sandbox/elsewhere');
    assert.equal(unknownSandbox.status, 404);
    assert.equal(unknownSandbox.body.error.code, 'route_not_found');

    assert.deepEqual((await call('GET', '/not-the-sandbox')).body, { host_not_found: true });
    const host = await call('POST', '/host-echo', '{"a":1}');
    assert.equal(host.status, 418, 'the host keeps its own parser and error handler');
    assert.equal(host.body.host_error, 'the host JSON parser refuses everything');
  });
});

describe('the sandbox mounted in the service', () => {
  it("a request the service's own hooks refuse (a NUL character, nesting past its limit) is a 400 in the sandbox's envelopes, not a 500", async (t) => {
    const server = await startServer(t);
    const nul = JSON.stringify({ latency_ms: 'a\u0000' });
    const deep = '{"a":'.repeat(40) + '1' + '}'.repeat(40);
    const json = { 'content-type': 'application/json' };
    for (const body of [nul, deep]) {
      const control = await server.request('POST', '/sandbox/control/behaviour', { rawBody: body, headers: json });
      assert.equal(control.status, 400, control.text);
      assert.equal(control.body.error.code, 'validation_failed');
      assert.equal(control.body.error.request_id, control.headers.get('x-request-id'), "the service's request id");
      assert.equal(control.body.error.doc_url, `${server.config.publicBaseUrl}/docs/errors/validation_failed`);
      const graph = await server.request('POST', `/sandbox${V}/123/messages`, { rawBody: body, headers: json });
      assert.equal(graph.status, 400, graph.text);
      assert.equal(graph.body.error.code, 100);
      assert.equal(graph.body.error.fbtrace_id, graph.headers.get('x-fb-trace-id'));
    }
    const query = await server.request('GET', '/sandbox/control/behaviour?x%00=1');
    assert.equal(query.status, 400, query.text);
  });
});
