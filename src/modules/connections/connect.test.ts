import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { assertError, createConnection, createKey, settle, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

/** The sandbox's control API, mounted at /sandbox in sandbox mode. */
async function control(server: TestServer, path: string, body: unknown) {
  const response = await server.request('POST', `/sandbox/control/${path}`, { body });
  assert.ok(response.status < 300, `sandbox control ${path}: ${response.text}`);
  return response.body;
}

async function eventsOf(server: TestServer, organizationId: string, type: string) {
  const rows = await server.app.store.db
    .selectFrom('events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('type', '=', type)
    .orderBy('id')
    .execute();
  return rows.map((row) => JSON.parse(row.data) as Record<string, any>);
}

describe('connecting a number', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  it('exchanges the code, reads the number, subscribes the app, and emits connection.connected', async () => {
    const response = await server.request('POST', '/v1/connections', {
      token: owner.token,
      body: { code: 'any-code', name: 'Support', metadata: { team: 'eu' } },
    });
    assert.equal(response.status, 201, response.text);
    const connection = response.body;
    assert.match(connection.id, /^conn_/);
    assert.equal(connection.status, 'connected');
    assert.match(connection.phone_number_id, /^\d+$/);
    assert.match(connection.waba_id, /^\d+$/);
    assert.ok(connection.display_phone_number);
    assert.ok(connection.verified_name);
    assert.equal(connection.throughput_per_second, 80);
    assert.equal(connection.onboarding, null);
    assert.deepEqual(connection.metadata, { team: 'eu' });
    assert.equal(connection.test, false);
    assert.ok(!JSON.stringify(connection).includes('EAA'), 'the business token never leaves the service');

    const [event] = await eventsOf(server, owner.organizationId, 'connection.connected');
    assert.equal(event!.id, connection.id);
    const stored = await server.app.store.db.selectFrom('connections').select('access_token').where('id', '=', connection.id).executeTakeFirstOrThrow();
    assert.match(stored.access_token!, /^v1\./, 'the token is sealed at rest');
    const subscribed = await server.request('GET', `/sandbox/control/numbers`);
    assert.ok(JSON.stringify(subscribed.body).includes(connection.phone_number_id));
  });

  it('a test key connects a test number by default, and may not connect a live one', async () => {
    const key = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
    const created = await server.request('POST', '/v1/connections', { token: key.key, body: { code: 'c' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.test, true);
    const refused = assertError(
      await server.request('POST', '/v1/connections', { token: key.key, body: { code: 'c', test: false } }),
      403,
      'test_key_on_live_connection',
    );
    assert.equal(refused.param, '/test');
  });

  it('a coexistence number is paced at 20 per second and starts its history import', async () => {
    const connection = await createConnection(server, owner, { coexistence: true });
    assert.equal(connection.coexistence, true);
    assert.equal(connection.throughput_per_second, 20);
    assert.equal(connection.onboarding.status, 'pending');
    await server.app.worker.drain();
    const after = await server.request('GET', `/v1/connections/${connection.id}`, { token: owner.token });
    assert.equal(after.body.onboarding.status, 'importing');
    const progress = await eventsOf(server, owner.organizationId, 'onboarding.progress');
    assert.ok(progress.some((object) => object.id === connection.id));
  });

  it('the same number cannot be connected twice', async () => {
    const connection = await createConnection(server, owner);
    const again = await server.request('POST', '/v1/connections', {
      token: owner.token,
      body: { code: 'x', phone_number_id: connection.phone_number_id, waba_id: connection.waba_id },
    });
    // The sandbox creates a fresh number for every code, so naming another account's number is refused by the provider.
    assert.ok([409, 502].includes(again.status), again.text);
  });

  it('bad bodies are refused before the provider is called', async () => {
    const missing = assertError(await server.request('POST', '/v1/connections', { token: owner.token, body: {} }), 400, 'validation_failed');
    assert.equal(missing.param, '/code');
    const unknown = assertError(
      await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c', colour: 'red' } }),
      400,
      'validation_failed',
    );
    assert.equal(unknown.param, '/colour');
    const pin = assertError(
      await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c', pin: '12ab56' } }),
      400,
      'validation_failed',
    );
    assert.equal(pin.param, '/pin');
    const ids = assertError(
      await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c', phone_number_id: '../1' } }),
      400,
      'validation_failed',
    );
    assert.equal(ids.param, '/phone_number_id');
    const coexistencePin = assertError(
      await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c', coexistence: true, pin: '123456' } }),
      400,
      'validation_failed',
    );
    assert.equal(coexistencePin.param, '/pin');
  });

  it('a code outside OAuth’s visible ASCII is validation_failed on /code, never sent to the provider (2,048 of U+FEFF was a 502)', async () => {
    for (const code of ['\u{FEFF}'.repeat(2048), 'café', 'line\nbreak']) {
      const error = assertError(await server.request('POST', '/v1/connections', { token: owner.token, body: { code } }), 400, 'validation_failed');
      assert.equal(error.param, '/code');
    }
    const connection = await createConnection(server, owner);
    const reauthorised = await server.request('POST', `/v1/connections/${connection.id}/reauthorise`, { token: owner.token, body: { code: 'café' } });
    assert.equal(assertError(reauthorised, 400, 'validation_failed').param, '/code');
  });

  it('a provider failure is a provider error carrying the provider code, and nothing is stored', async () => {
    const before = (await server.request('GET', '/v1/connections?limit=100', { token: owner.token })).body.data.length;
    await control(server, 'behaviour', { fail_next: { code: 131000 } });
    const error = assertError(await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c' } }), 502, 'provider_unavailable');
    assert.equal(error.provider.code, 131000);
    await control(server, 'behaviour', { fail_next: { code: 100, details: 'Invalid parameter' } });
    const rejected = assertError(await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'c' } }), 502, 'provider_rejected');
    assert.equal(rejected.provider.code, 100);
    const afterList = (await server.request('GET', '/v1/connections?limit=100', { token: owner.token })).body.data.length;
    assert.equal(afterList, before);
  });

  it('a connection key may not connect numbers', async () => {
    const connection = await createConnection(server, owner);
    const key = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
    assertError(await server.request('POST', '/v1/connections', { token: key.key, body: { code: 'c' } }), 403, 'credential_kind_not_allowed');
  });
});

describe('a connected number over its life', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  it('sync records a quality and limit change, each as its event', async () => {
    const connection = await createConnection(server, owner);
    await control(server, 'quality', { phone_number_id: connection.phone_number_id, quality_rating: 'YELLOW' });
    await control(server, 'limit-tier', { phone_number_id: connection.phone_number_id, tier: 'TIER_10K' });
    const synced = await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token });
    assert.equal(synced.status, 200, synced.text);
    assert.equal(synced.body.quality_rating, 'yellow');
    assert.equal(synced.body.messaging_limit_tier, 'TIER_10K');
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.quality_changed')).filter((o) => o.id === connection.id).length, 1);
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.limit_changed')).filter((o) => o.id === connection.id).length, 1);
    const again = await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token });
    assert.equal(again.status, 200);
    assert.equal(
      (await eventsOf(server, owner.organizationId, 'connection.quality_changed')).filter((o) => o.id === connection.id).length,
      1,
      'no change, no event',
    );
  });

  it('delete disconnects: the app is unsubscribed, the token forgotten, the record kept', async () => {
    const connection = await createConnection(server, owner);
    const deleted = await server.request('DELETE', `/v1/connections/${connection.id}`, { token: owner.token });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.body.status, 'disconnected');
    assert.ok(deleted.body.disconnected_at);
    const stored = await server.app.store.db.selectFrom('connections').select('access_token').where('id', '=', connection.id).executeTakeFirstOrThrow();
    assert.equal(stored.access_token, null);
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.disconnected')).filter((o) => o.id === connection.id).length, 1);
    const twice = await server.request('DELETE', `/v1/connections/${connection.id}`, { token: owner.token });
    assert.equal(twice.status, 200);
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.disconnected')).filter((o) => o.id === connection.id).length, 1);
    assertError(await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token }), 409, 'connection_inactive');
    // Once disconnected, the number may be connected again.
    const reconnected = await server.request('POST', '/v1/connections', { token: owner.token, body: { code: 'again' } });
    assert.equal(reconnected.status, 201);
  });

  it("another organization's connection is 404 on every operation", async () => {
    const connection = await createConnection(server, owner);
    const stranger = await signUp(server);
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { name: 'x' }],
      ['DELETE', '', undefined],
      ['POST', '/sync', undefined],
      ['POST', '/reauthorise', { code: 'c' }],
    ] as const) {
      assertError(await server.request(method, `/v1/connections/${connection.id}${path}`, { token: stranger.token, body }), 404, 'resource_not_found');
    }
  });
});

describe('what the provider says about a connected number', () => {
  let server: TestServer;
  let owner: SignedUp;
  // The deadline test moves the clock past the dashboard token's 15 minutes; a key does not expire.
  let apiKey: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });
  const get = async (id: string) => (await server.request('GET', `/v1/connections/${id}`, { token: apiKey })).body;

  it('a revoked token turns the connection needs_reauth once; reauthorise with a new code reconnects it', async () => {
    const connection = await createConnection(server, owner);
    await control(server, 'revoke-token', { waba_id: connection.waba_id });
    assertError(await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token }), 409, 'connection_needs_reauth');
    assert.equal((await get(connection.id)).status, 'needs_reauth');
    assertError(await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token }), 409, 'connection_needs_reauth');
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.needs_reauth')).filter((o) => o.id === connection.id).length, 1);

    // A code for another account is refused, and the connection stays as it was.
    const other = await createConnection(server, owner);
    const foreign = await control(server, `numbers/${other.phone_number_id}/code`, {});
    const refused = assertError(
      await server.request('POST', `/v1/connections/${connection.id}/reauthorise`, { token: owner.token, body: { code: foreign.code } }),
      400,
      'validation_failed',
    );
    assert.equal(refused.param, '/code');
    assert.equal((await get(connection.id)).status, 'needs_reauth');

    const { code } = await control(server, `numbers/${connection.phone_number_id}/code`, {});
    const reauthorised = await server.request('POST', `/v1/connections/${connection.id}/reauthorise`, { token: owner.token, body: { code } });
    assert.equal(reauthorised.status, 200, reauthorised.text);
    assert.equal(reauthorised.body.status, 'connected');
    assert.equal((await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token })).status, 200);
  });

  it('a quality webhook makes the service read the number again, and emits what moved', async () => {
    const connection = await createConnection(server, owner);
    await control(server, 'quality', { phone_number_id: connection.phone_number_id, quality_rating: 'RED' });
    await settle(server);
    assert.equal((await get(connection.id)).quality_rating, 'red');
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.quality_changed')).filter((o) => o.id === connection.id).length, 1);
    await control(server, 'limit-tier', { phone_number_id: connection.phone_number_id, tier: 'TIER_100K' });
    await settle(server);
    assert.equal((await get(connection.id)).messaging_limit_tier, 'TIER_100K');
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.limit_changed')).filter((o) => o.id === connection.id).length, 1);
  });

  it('an account update that removes our app disconnects the connection', async () => {
    const connection = await createConnection(server, owner);
    await control(server, 'account-update', { waba_id: connection.waba_id, event: 'PARTNER_APP_UNINSTALLED' });
    await settle(server);
    const after = await get(connection.id);
    assert.equal(after.status, 'disconnected');
    assert.equal((await eventsOf(server, owner.organizationId, 'connection.disconnected')).filter((o) => o.id === connection.id).length, 1);
  });

  it('coexistence history arrives in chunks: imported messages, progress, then completed', async () => {
    const connection = await createConnection(server, owner, { coexistence: true });
    await settle(server);
    assert.equal((await get(connection.id)).onboarding.status, 'importing');
    const thread = (user: string, text: string) => ({
      user,
      messages: [
        { direction: 'inbound', text, timestamp: 1_770_000_000 },
        { direction: 'outbound', text: `re: ${text}`, status: 'READ', timestamp: 1_770_000_100 },
      ],
    });
    // Out of order: the later chunk first.
    await control(server, 'history', {
      phone_number_id: connection.phone_number_id,
      phase: 1,
      chunk_order: 2,
      progress: 60,
      threads: [thread('447700900001', 'older')],
    });
    await settle(server);
    let state = await get(connection.id);
    assert.equal(state.onboarding.progress, 60);
    assert.equal(state.onboarding.messages_imported, 2);
    await control(server, 'history', {
      phone_number_id: connection.phone_number_id,
      phase: 0,
      chunk_order: 1,
      progress: 30,
      threads: [thread('447700900002', 'recent')],
    });
    await settle(server);
    state = await get(connection.id);
    assert.equal(state.onboarding.progress, 60, 'progress never goes back');
    assert.equal(state.onboarding.messages_imported, 4);
    await control(server, 'history', { phone_number_id: connection.phone_number_id, phase: 2, chunk_order: 3, progress: 100, threads: [] });
    await settle(server);
    state = await get(connection.id);
    assert.equal(state.onboarding.status, 'completed');
    assert.ok(state.onboarding.completed_at);
    assert.equal((await eventsOf(server, owner.organizationId, 'onboarding.completed')).filter((o) => o.id === connection.id).length, 1);

    const imported = await server.app.store.db.selectFrom('messages').selectAll().where('connection_id', '=', connection.id).execute();
    assert.equal(imported.length, 4);
    assert.ok(imported.every((message) => message.imported === 1));
    assert.equal(imported.find((message) => message.direction === 'outbound')!.status, 'read');
    const received = (await eventsOf(server, owner.organizationId, 'message.received')).filter((o) => o.connection_id === connection.id);
    assert.equal(received.length, 0, 'imported history triggers no message event');
    const conversations = await server.app.store.db.selectFrom('conversations').selectAll().where('connection_id', '=', connection.id).execute();
    assert.ok(
      conversations.every((conversation) => conversation.last_inbound_at === null),
      'imported history opens no window',
    );
  });

  it('a declined history share fails the onboarding', async () => {
    const connection = await createConnection(server, owner, { coexistence: true });
    await settle(server);
    await control(server, 'history', { phone_number_id: connection.phone_number_id, error: {} });
    await settle(server);
    const state = await get(connection.id);
    assert.equal(state.onboarding.status, 'failed');
    assert.match(state.onboarding.failure_reason, /2593109/);
    assert.equal((await eventsOf(server, owner.organizationId, 'onboarding.failed')).filter((o) => o.id === connection.id).length, 1);
  });

  it('an import that never completes fails at its deadline', async () => {
    const connection = await createConnection(server, owner, { coexistence: true });
    await settle(server);
    server.clock.advance(25 * 60 * 60 * 1000);
    await server.app.worker.drain();
    const state = await get(connection.id);
    assert.equal(state.onboarding.status, 'failed');
    assert.match(state.onboarding.failure_reason, /24 hours/);
  });
});

describe("a connection's templates", () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));
  const templatesOf = (connectionId: string) =>
    server.app.store.db.selectFrom('templates').selectAll().where('connection_id', '=', connectionId).orderBy('name').execute();

  it('sync records the account’s templates; the provider’s review is template.status_changed; one gone is deleted', async () => {
    const connection = await createConnection(server, owner);
    const key = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
    // A template made at the provider itself, through the runtime surface.
    const created = await server.request('POST', `/runtime/v24.0/${connection.waba_id}/message_templates`, {
      token: key.key,
      body: {
        name: 'order_ready',
        language: 'en_US',
        category: 'UTILITY',
        components: [{ type: 'BODY', text: 'Your order {{1}} is ready', example: { body_text: [['A-1']] } }],
      },
    });
    assert.equal(created.status, 200, created.text);

    assert.equal((await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token })).status, 200);
    let rows = await templatesOf(connection.id);
    assert.deepEqual(
      rows.map((row) => [row.name, row.status]),
      [
        ['hello_world', 'approved'],
        ['order_ready', 'pending'],
      ],
    );
    const body = (JSON.parse(rows[1]!.components) as { type: string; text?: string }[]).find((component) => component.type === 'body');
    assert.equal(body?.text, 'Your order {{1}} is ready');

    await control(server, 'template-status', { template_id: created.body.id, status: 'APPROVED' });
    await settle(server);
    rows = await templatesOf(connection.id);
    assert.equal(rows[1]!.status, 'approved');
    const changed = (await eventsOf(server, owner.organizationId, 'template.status_changed')).filter((t) => t.connection_id === connection.id);
    assert.deepEqual(
      changed.map((t) => [t.name, t.status]),
      [['order_ready', 'approved']],
    );
    assert.match(changed[0]!.id, /^tpl_/);

    const removed = await server.request('DELETE', `/runtime/v24.0/${connection.waba_id}/message_templates?name=order_ready`, { token: key.key });
    assert.equal(removed.status, 200, removed.text);
    assert.equal((await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token })).status, 200);
    rows = await templatesOf(connection.id);
    assert.equal(rows.find((row) => row.name === 'order_ready')!.status, 'deleted');
  });
});
