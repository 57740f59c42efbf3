/**
 * Connectors end to end, through a listening server and a real HTTP API on loopback: connecting an
 * account (its test request), secrets never shown, disconnecting, and `http_request` steps calling
 * through an account: the answer saved and the `ok` branch; `error` for a refusal, a non-2xx, a
 * redirect, a hang, a 10 MB answer, a host outside the account's; retries on 5xx with the same
 * Idempotency-Key and none on 4xx; an account disconnected under a running automation; deploys
 * refused for unusable accounts; dry runs that call nothing; private addresses refused when private
 * networks are not allowed.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { automationReader } from '../../../test/automations.ts';
import { assertError, createKey, newCustomer, settle, signUp, type SignedUp } from '../../../test/factories.ts';
import { startApi, type FakeApi } from '../../../test/fake-api.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';

type Json = Record<string, any>;

const TOKEN = 'shop_secret_token_0123456789';

describe('connectors', () => {
  let server: TestServer;
  let owner: SignedUp;
  let key: string;
  let api: FakeApi;
  const suite = suiteScope();
  const { number, runsOf, eventsOf } = automationReader(
    () => server,
    () => key,
  );

  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    api = await startApi(suite);
  });

  async function connect(fields: Json = {}, token = key, connector = 'http_bearer') {
    api.json(200, { ok: true });
    const response = await server.request('POST', '/v1/connector-accounts', {
      token,
      body: { connector, name: 'Shop', fields: { base_url: `${api.url}/api`, token: TOKEN, ...fields } },
    });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  const call = (accountId: string, extra: Json = {}) => ({
    id: 'call',
    type: 'http_request',
    connector_account_id: accountId,
    method: 'POST',
    path: '/orders/{{ input.order }}/refund',
    query: { reason: '{{ input.reason }}' },
    body: '{"order": input.order, "amount": 12}',
    save_as: 'refund',
    branches: { ok: 'done', error: 'failed' },
    ...extra,
  });
  /** The call (after `before`), then `done`, and `failed` when the call has an error branch. */
  const flow = (accountId: string, extra: Json = {}, before: Json[] = []) => {
    const step = call(accountId, extra);
    const failed = step.branches.error ? [{ id: 'failed', type: 'end', outcome: 'refund_failed' }] : [];
    return { trigger: { type: 'api' }, start: before[0]?.id ?? 'call', steps: [...before, step, { id: 'done', type: 'end', outcome: 'refunded' }, ...failed] };
  };

  async function automation(definition: Json): Promise<Json> {
    const connection = await number();
    const created = await server.request('POST', '/v1/automations', { token: key, body: { name: 'Refunds', connection_id: connection.id, definition } });
    assert.equal(created.status, 201, created.text);
    const deployed = await server.request('POST', `/v1/automations/${created.body.id}/deploy`, { token: key, body: { version: 1 } });
    assert.equal(deployed.status, 200, deployed.text);
    const enabled = await server.request('POST', `/v1/automations/${created.body.id}/enable`, { token: key });
    assert.equal(enabled.status, 200, enabled.text);
    return { ...enabled.body, connection };
  }

  async function start(automationId: string, input: Json = { order: 'A42', reason: 'damaged' }): Promise<Json> {
    const started = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': `run-${automationId}-${Math.random()}` },
      body: { automation_id: automationId, to: `+${newCustomer()}`, input },
    });
    assert.equal(started.status, 201, started.text);
    return started.body;
  }

  const runNow = async (id: string): Promise<Json> => (await server.request('GET', `/v1/runs/${id}`, { token: key })).body;

  /** Runs the queue, moving the clock past each retry's delay, until the run has ended. */
  async function finish(id: string): Promise<Json> {
    for (let round = 0; round < 6; round++) {
      await settle(server);
      const run = await runNow(id);
      if (['completed', 'failed', 'canceled', 'timed_out'].includes(run.status)) return run;
      server.clock.advance(15_000);
    }
    return runNow(id);
  }

  describe('the catalogue and accounts', () => {
    it('lists the four connectors with their fields', async () => {
      const response = await server.request('GET', '/v1/connectors', { token: key });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(
        response.body.data.map((connector: Json) => connector.id),
        ['http_bearer', 'http_basic', 'http_api_key', 'webhook'],
      );
      const bearer = response.body.data[0];
      assert.deepEqual(
        bearer.fields.map((field: Json) => [field.name, field.type]),
        [
          ['base_url', 'string'],
          ['token', 'secret'],
          ['test_path', 'string'],
        ],
      );
    });

    it('connecting sends the test request with the credentials and stores an active account that never shows its secret', async () => {
      const before = api.seen.length;
      const account = await connect({ test_path: '/ping' });
      assert.equal(account.object, 'connector_account');
      assert.match(account.id, /^cna_/);
      assert.equal(account.status, 'active');
      assert.equal(account.mode, 'live');
      assert.deepEqual(account.allowed_hosts, [`127.0.0.1:${api.port}`]);
      assert.equal(account.secret_hint, '…6789');
      assert.ok(account.last_verified_at);
      const test = api.seen[before]!;
      assert.equal(test.method, 'GET');
      assert.equal(test.url, '/api/ping');
      assert.equal(test.headers.authorization, `Bearer ${TOKEN}`);

      const got = await server.request('GET', `/v1/connector-accounts/${account.id}`, { token: key });
      const listed = await server.request('GET', '/v1/connector-accounts', { token: key });
      for (const response of [got, listed]) {
        assert.equal(response.status, 200, response.text);
        assert.doesNotMatch(response.text, /shop_secret_token/);
      }
      assert.ok(listed.body.data.some((each: Json) => each.id === account.id));
      const stored = await server.app.store.db.selectFrom('connector_accounts').select('credentials').where('id', '=', account.id).executeTakeFirstOrThrow();
      assert.doesNotMatch(stored.credentials!, /shop_secret_token/, 'sealed at rest');
    });

    it('each connector puts its credentials where it says', async () => {
      api.json(200, {});
      const before = api.seen.length;
      const basic = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'http_basic', name: 'Basic', fields: { base_url: api.url, username: 'shop', password: 'pa55word-long-enough' } },
      });
      assert.equal(basic.status, 201, basic.text);
      const apiKey = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'http_api_key', name: 'Key', fields: { base_url: api.url, header_name: 'X-Shop-Key', api_key: 'key-0123456789abcdef' } },
      });
      assert.equal(apiKey.status, 201, apiKey.text);
      const webhook = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'webhook', name: 'Hook', fields: { base_url: `${api.url}/hook`, signing_secret: 'whsec_0123456789abcdefghijklmn' } },
      });
      assert.equal(webhook.status, 201, webhook.text);
      const [b, k, w] = api.seen.slice(before);
      assert.equal(b!.headers.authorization, `Basic ${Buffer.from('shop:pa55word-long-enough').toString('base64')}`);
      assert.equal(k!.headers['x-shop-key'], 'key-0123456789abcdef');
      assert.equal(w!.method, 'POST');
      assert.match(String(w!.headers['service-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
    });

    it('a connect whose test request is refused stores nothing and says why', async () => {
      const before = (await server.request('GET', '/v1/connector-accounts?limit=100', { token: key })).body.data.length;
      api.json(401, { error: 'bad token' });
      const refused = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'http_bearer', name: 'Wrong', fields: { base_url: api.url, token: 'wrong-token-0123456789' } },
      });
      const error = assertError(refused, 502, 'provider_rejected');
      assert.match(error.message, /answered 401/);
      assert.equal((await server.request('GET', '/v1/connector-accounts?limit=100', { token: key })).body.data.length, before);
    });

    it('a field the connector does not have, or a missing secret, is refused naming it', async () => {
      const unknown = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'http_bearer', name: 'X', fields: { base_url: api.url, token: 't', password: 'p' } },
      });
      assert.equal(assertError(unknown, 400, 'validation_failed').param, '/fields/password');
      const missing = await server.request('POST', '/v1/connector-accounts', {
        token: key,
        body: { connector: 'http_bearer', name: 'X', fields: { base_url: api.url } },
      });
      assert.equal(assertError(missing, 400, 'validation_failed').param, '/fields/token');
    });

    it('disconnecting wipes the secrets and revokes the account; a second time is invalid_state', async () => {
      const account = await connect();
      const gone = await server.request('DELETE', `/v1/connector-accounts/${account.id}`, { token: key });
      assert.equal(gone.status, 200, gone.text);
      assert.equal(gone.body.status, 'revoked');
      const stored = await server.app.store.db.selectFrom('connector_accounts').select('credentials').where('id', '=', account.id).executeTakeFirstOrThrow();
      assert.equal(stored.credentials, null);
      assertError(await server.request('DELETE', `/v1/connector-accounts/${account.id}`, { token: key }), 409, 'invalid_state');
    });

    it('a test key makes test accounts, sees only those, and a live automation cannot deploy with one', async () => {
      const testKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
      const testAccount = await connect({}, testKey);
      assert.equal(testAccount.mode, 'test');
      const live = await connect();
      assertError(await server.request('GET', `/v1/connector-accounts/${live.id}`, { token: testKey }), 404, 'resource_not_found');
      const listed = (await server.request('GET', '/v1/connector-accounts?limit=100', { token: testKey })).body.data as Json[];
      assert.ok(listed.every((each) => each.mode === 'test'));

      const connection = await number();
      const created = await server.request('POST', '/v1/automations', {
        token: key,
        body: { name: 'Mixed', connection_id: connection.id, definition: flow(testAccount.id) },
      });
      assert.equal(created.status, 201, created.text);
      const refused = await server.request('POST', `/v1/automations/${created.body.id}/deploy`, { token: key, body: { version: 1 } });
      const error = assertError(refused, 409, 'invalid_state');
      assert.equal(error.param, '/definition/steps/0/connector_account_id');
      assert.match(error.message, /test account/);
    });

    it('a deploy referencing a disconnected account is refused, pointing at the step', async () => {
      const account = await connect();
      await server.request('DELETE', `/v1/connector-accounts/${account.id}`, { token: key });
      const connection = await number();
      const created = await server.request('POST', '/v1/automations', {
        token: key,
        body: { name: 'Gone', connection_id: connection.id, definition: flow(account.id) },
      });
      const refused = await server.request('POST', `/v1/automations/${created.body.id}/deploy`, { token: key, body: { version: 1 } });
      assert.equal(assertError(refused, 409, 'invalid_state').param, '/definition/steps/0/connector_account_id');
    });
  });

  describe('http_request steps', () => {
    it('calls the account with the rendered request and its credentials, saves the JSON answer and takes ok', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      api.json(201, { refund_id: 're_1', amount: 12 });
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.equal(run.outcome, 'refunded');
      assert.equal(run.variables.refund.status, 201);
      assert.deepEqual(run.variables.refund.body, { refund_id: 're_1', amount: 12 });
      const [request, ...more] = api.seen.slice(before);
      assert.equal(more.length, 0);
      assert.equal(request!.method, 'POST');
      assert.equal(request!.url, '/api/orders/A42/refund?reason=damaged');
      assert.deepEqual(JSON.parse(request!.body), { order: 'A42', amount: 12 });
      assert.equal(request!.headers.authorization, `Bearer ${TOKEN}`);
      assert.equal(request!.headers['content-type'], 'application/json');
      assert.equal(request!.headers['idempotency-key'], `${run.id}:0`);
      const events = await eventsOf(run.id);
      const recorded = events.find((event) => event.type === 'effect.http_request')!;
      assert.deepEqual(recorded.data, { method: 'POST', url: `${api.url}/api/orders/A42/refund?reason=damaged`, attempt: 1 });
      assert.doesNotMatch(JSON.stringify(events), /shop_secret_token/);
      assert.deepEqual(events.find((event) => event.type === 'effect.http_response')!.data, { status: 201, attempt: 1 });
    });

    it('a 4xx takes the error branch at once, with no retry', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      api.json(404, { error: 'no such order' });
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refund_failed');
      assert.equal(run.variables.refund.status, 404);
      assert.equal(api.seen.length - before, 1);
    });

    it('a 4xx with no error branch fails the run with provider_rejected', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id, { branches: { ok: 'done' } }));
      api.json(422, {});
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'provider_rejected');
      assert.equal(run.error.step_id, 'call');
    });

    it('a 5xx is retried with the same Idempotency-Key, and a later success takes ok', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      let calls = 0;
      api.answer((_request, response) => {
        calls++;
        if (calls === 1) response.writeHead(503).end();
        else response.writeHead(200, { 'content-type': 'application/json' }).end('{"refund_id":"re_2"}');
      });
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refunded', JSON.stringify(run));
      const requests = api.seen.slice(before);
      assert.equal(requests.length, 2);
      assert.equal(requests[0]!.headers['idempotency-key'], `${run.id}:0`);
      assert.equal(requests[1]!.headers['idempotency-key'], requests[0]!.headers['idempotency-key']);
      const attempts = (await eventsOf(run.id)).filter((event) => event.type.startsWith('effect.http')).map((event) => event.data);
      assert.deepEqual(attempts, [
        { method: 'POST', url: `${api.url}/api/orders/A42/refund?reason=damaged`, attempt: 1 },
        { status: 503, attempt: 1, retrying: true },
        { method: 'POST', url: `${api.url}/api/orders/A42/refund?reason=damaged`, attempt: 2 },
        { status: 200, attempt: 2 },
      ]);
      assert.equal(run.steps_executed, 2, 'the retried step counts once');
    });

    it('a 5xx on every attempt takes the error branch after three', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      api.answer((_request, response) => void response.writeHead(500).end());
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refund_failed');
      assert.equal(api.seen.length - before, 3);
    });

    it('a redirect is not followed: its answer takes the error branch', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      api.answer((_request, response) => void response.writeHead(302, { location: `${api.url}/elsewhere` }).end());
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refund_failed');
      assert.equal(run.variables.refund.status, 302);
      assert.deepEqual(
        api.seen.slice(before).map((request) => request.url),
        ['/api/orders/A42/refund?reason=damaged'],
      );
    });

    it('an API that hangs times out on each attempt and takes the error branch', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id, { timeout_ms: 150 }));
      api.answer(() => undefined);
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refund_failed');
      assert.equal(api.seen.length - before, 3);
      const failed = (await eventsOf(run.id)).find((event) => event.type === 'step.failed')!;
      assert.equal(failed.data.code, 'provider_timeout');
    });

    it('a 10 MB answer is an error, not read to the end', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id, { branches: { ok: 'done' } }));
      api.answer((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.on('error', () => undefined);
        response.end(Buffer.alloc(10 * 1024 * 1024, 0x20));
      });
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'body_too_large');
      assert.equal(api.seen.length - before, 1, 'not retried');
    });

    it('a path that leaves the account’s host is refused, with nothing sent', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id, { path: `http://localhost:${api.port}/steal` }));
      const before = api.seen.length;
      const run = await finish((await start(auto.id)).id);
      assert.equal(run.outcome, 'refund_failed');
      const failed = (await eventsOf(run.id)).find((event) => event.type === 'step.failed')!;
      assert.equal(failed.data.code, 'url_not_allowed');
      assert.match(failed.data.message, /not among the account's allowed hosts/);
      assert.equal(api.seen.length, before);
    });

    it('an account disconnected while a run waits fails the step when the run reaches it', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id, { branches: { ok: 'done' } }, [{ id: 'pause', type: 'delay', seconds: 60, next: 'call' }]));
      const started = await start(auto.id);
      await settle(server);
      assert.equal((await runNow(started.id)).status, 'waiting');
      const gone = await server.request('DELETE', `/v1/connector-accounts/${account.id}`, { token: key });
      assert.equal(gone.status, 200, gone.text);
      const before = api.seen.length;
      server.clock.advance(61_000);
      const run = await finish(started.id);
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'invalid_state');
      assert.match(run.error.message, /disconnected/);
      assert.equal(api.seen.length, before);
    });

    it('a dry run takes the simulated answers and calls nothing', async () => {
      const account = await connect();
      const auto = await automation(flow(account.id));
      const before = api.seen.length;
      const dry = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `dry-${auto.id}` },
        body: {
          automation_id: auto.id,
          to: `+${newCustomer()}`,
          input: { order: 'A7', reason: 'late' },
          dry_run: true,
          simulate: { http: [{ status: 200, body: { refund_id: 're_sim' } }] },
        },
      });
      assert.equal(dry.status, 201, dry.text);
      assert.equal(dry.body.outcome, 'refunded');
      assert.deepEqual(dry.body.variables.refund.body, { refund_id: 're_sim' });
      const types = dry.body.events.map((event: Json) => event.type);
      assert.ok(types.includes('effect.http_request') && types.includes('effect.http_response'), types.join(', '));
      assert.equal(api.seen.length, before);
      assert.equal((await runsOf(auto.id)).filter((run) => !run.dry_run).length, 0);
    });
  });

  describe('with private networks refused', () => {
    let guarded: TestServer;
    let guardedKey: string;
    const scope = suiteScope();
    before(async () => {
      guarded = await startServer(scope, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
      const someone = await signUp(guarded);
      guardedKey = (await createKey(guarded, someone.token, { kind: 'organization', mode: 'live' })).key;
    });

    for (const baseUrl of ['https://localhost/api', 'https://169.254.169.254/latest', 'http://shop.example.com/api']) {
      it(`connecting to ${baseUrl} is refused before anything is sent`, async () => {
        const refused = await guarded.request('POST', '/v1/connector-accounts', {
          token: guardedKey,
          body: { connector: 'http_bearer', name: 'Inside', fields: { base_url: baseUrl, token: TOKEN } },
        });
        const error = assertError(refused, 400, 'url_not_allowed');
        assert.equal(error.param, '/fields/base_url');
      });
    }
  });
});
