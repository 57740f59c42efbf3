import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, createKey, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

describe('connections', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  it('get returns the connection in its API shape', async () => {
    const connection = await createConnection(server, owner, { test: true, coexistence: true });
    const response = await server.request('GET', `/v1/connections/${connection.id}`, { token: owner.token });
    assert.equal(response.status, 200);
    assert.equal(response.body.object, 'connection');
    assert.equal(response.body.test, true);
    assert.equal(response.body.coexistence, true);
    assert.equal(response.body.status, 'connected');
  });

  it('update changes the name, merges metadata, removes keys set to null, and is audited', async () => {
    const connection = await createConnection(server, owner);
    await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { metadata: { a: 1, b: 2 } } });
    const response = await server.request('PATCH', `/v1/connections/${connection.id}`, {
      token: owner.token,
      body: { name: 'Sales', metadata: { b: null, c: 3 } },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.name, 'Sales');
    assert.deepEqual(response.body.metadata, { a: 1, c: 3 });
    const events = await server.request('GET', `/v1/events?target_id=${connection.id}`, { token: owner.token });
    assert.deepEqual(
      events.body.data.map((event: { action: string }) => event.action),
      ['connection.updated', 'connection.updated', 'connection.connected'],
    );
  });

  it('a connection key may read its connection, and may not update it without connections:write', async () => {
    const connection = await createConnection(server, owner);
    const key = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
    assert.equal((await server.request('GET', `/v1/connections/${connection.id}`, { token: key.key })).status, 200);
    assertError(await server.request('PATCH', `/v1/connections/${connection.id}`, { token: key.key, body: { name: 'x' } }), 403, 'scope_missing');
  });

  it('a viewer may list but not update', async () => {
    const connection = await createConnection(server, owner);
    const viewer = await addMember(server, owner.organizationId, 'viewer');
    assert.equal((await server.request('GET', '/v1/connections', { token: viewer.token })).status, 200);
    assertError(await server.request('PATCH', `/v1/connections/${connection.id}`, { token: viewer.token, body: { name: 'x' } }), 403, 'scope_missing');
  });

  it('metadata over 50 keys is refused', async () => {
    const connection = await createConnection(server, owner);
    const metadata = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    const error = assertError(
      await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { metadata } }),
      400,
      'validation_failed',
    );
    assert.equal(error.param, '/metadata');
  });

  it('an unknown connection is resource_not_found', async () => {
    assertError(await server.request('GET', '/v1/connections/conn_01J00000000000000000000000', { token: owner.token }), 404, 'resource_not_found');
  });
});

describe('connection metadata limits', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  it('a metadata key over 40 characters is refused', async () => {
    const connection = await createConnection(server, owner);
    const error = assertError(
      await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { metadata: { ['k'.repeat(41)]: 1 } } }),
      400,
      'validation_failed',
    );
    assert.equal(error.param, '/metadata');
  });

  it('merging cannot grow metadata past 50 keys, and nothing is written when it would', async () => {
    const connection = await createConnection(server, owner);
    const batch = (from: number) => Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${from + i}`, i]));
    assert.equal((await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { metadata: batch(0) } })).status, 200);
    const error = assertError(
      await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { name: 'renamed', metadata: batch(30) } }),
      400,
      'validation_failed',
    );
    assert.equal(error.param, '/metadata');
    const after = await server.request('GET', `/v1/connections/${connection.id}`, { token: owner.token });
    assert.equal(Object.keys(after.body.metadata).length, 30);
    assert.equal(after.body.name, 'Support line');
  });
});
