import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto.ts';
import { CONNECTION_KEY_SCOPES, ORGANIZATION_KEY_DEFAULT_SCOPES } from '../credentials/scopes.schemas.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, createKey, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

describe('API keys', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  describe('create', () => {
    it('an organization key is cok_<mode>_ + 32 characters, shown once, with the default scopes', async () => {
      const response = await server.request('POST', '/v1/api-keys', {
        token: owner.token,
        body: { kind: 'organization', mode: 'live', name: 'CRM sync', metadata: { team: 'ops' } },
      });
      assert.equal(response.status, 201);
      assert.match(response.body.key, /^cok_live_[0-9A-Za-z]{32}$/);
      assert.match(response.body.id, /^key_[0-9A-Z]{26}$/);
      assert.deepEqual(response.body.scopes, [...ORGANIZATION_KEY_DEFAULT_SCOPES]);
      assert.ok(!response.body.scopes.includes('keys:write'));
      assert.equal(response.body.redacted_key, `cok_live_…${response.body.key.slice(-4)}`);
      assert.equal(response.body.status, 'active');
      assert.deepEqual(response.body.metadata, { team: 'ops' });

      const list = await server.request('GET', '/v1/api-keys', { token: owner.token });
      const listed = list.body.data.find((k: { id: string }) => k.id === response.body.id);
      assert.ok(listed);
      assert.equal(listed.key, undefined, 'the full key is never listed');
      assert.ok(!list.text.includes(response.body.key));
    });

    it('only the hash of the key is stored', async () => {
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
      const row = await server.app.store.db.selectFrom('api_keys').selectAll().where('id', '=', key.id).executeTakeFirstOrThrow();
      assert.equal(row.key_hash, sha256Hex(key.key));
      assert.ok(!JSON.stringify(row).includes(key.key));
    });

    it('a connection key carries the connection-scoped defaults and may be narrowed', async () => {
      const connection = await createConnection(server, owner);
      const full = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
      assert.match(full.key, /^csk_live_[0-9A-Za-z]{32}$/);
      assert.deepEqual(full.scopes, [...CONNECTION_KEY_SCOPES]);
      const narrow = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id, scopes: ['messages:read'] });
      assert.deepEqual(narrow.scopes, ['messages:read']);
      const identity = await server.request('GET', '/v1/identity', { token: narrow.key });
      assert.equal(identity.body.connection_id, connection.id);
      assert.deepEqual(identity.body.scopes, ['messages:read']);
    });

    it('an organization key may be given keys:write explicitly', async () => {
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      assert.equal((await server.request('GET', '/v1/api-keys', { token: key.key })).status, 200);
    });

    it('the creation is in the audit log', async () => {
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      const events = await server.request('GET', `/v1/events?target_id=${key.id}`, { token: owner.token });
      assert.equal(events.body.data.length, 1);
      assert.equal(events.body.data[0].action, 'api_key.created');
      assert.deepEqual(events.body.data[0].actor, { type: 'member', id: owner.memberId });
    });
  });

  describe('create: refusals', () => {
    it('a connection key without a connection is validation_failed on /connection_id', async () => {
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'connection', mode: 'live' } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/connection_id');
    });

    it('an organization key naming a connection is validation_failed on /connection_id', async () => {
      const connection = await createConnection(server, owner);
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'organization', mode: 'live', connection_id: connection.id } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/connection_id');
    });

    it('a connection key cannot hold more than the connection-scoped set', async () => {
      const connection = await createConnection(server, owner);
      const error = assertError(
        await server.request('POST', '/v1/api-keys', {
          token: owner.token,
          body: { kind: 'connection', mode: 'live', connection_id: connection.id, scopes: ['messages:read', 'keys:write'] },
        }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/scopes/1');
    });

    it('an organization key cannot hold runtime:proxy', async () => {
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'organization', mode: 'live', scopes: ['runtime:proxy'] } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/scopes/0');
    });

    it('empty or repeated scopes are validation_failed', async () => {
      assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'organization', mode: 'live', scopes: [] } }),
        400,
        'validation_failed',
      );
      assertError(
        await server.request('POST', '/v1/api-keys', {
          token: owner.token,
          body: { kind: 'organization', mode: 'live', scopes: ['usage:read', 'usage:read'] },
        }),
        400,
        'validation_failed',
      );
    });

    it('a test connection key for a live connection is refused; a live one for a test connection is not', async () => {
      const live = await createConnection(server, owner, { test: false });
      const test = await createConnection(server, owner, { test: true });
      const refused = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'connection', mode: 'test', connection_id: live.id } }),
        403,
        'test_key_on_live_connection',
      );
      assert.equal(refused.param, '/connection_id');
      // Only test keys are confined to test connections: a live key may be bound to a test connection.
      const key = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: test.id });
      assert.match(key.key, /^csk_live_/);
      assert.equal((await server.request('GET', `/v1/connections/${test.id}`, { token: key.key })).status, 200);
      assertError(await server.request('GET', `/v1/connections/${live.id}`, { token: key.key }), 404, 'resource_not_found');
      assert.deepEqual(
        (await server.request('GET', '/v1/connections', { token: key.key })).body.data.map((c: { id: string }) => c.id),
        [test.id],
      );
    });

    it("another organization's connection is resource_not_found on /connection_id", async () => {
      const stranger = await signUp(server);
      const theirs = await createConnection(server, stranger);
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'connection', mode: 'live', connection_id: theirs.id } }),
        404,
        'resource_not_found',
      );
      assert.equal(error.param, '/connection_id');
    });

    it('keys are created only from the dashboard, by owners and admins', async () => {
      const orgKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      assertError(
        await server.request('POST', '/v1/api-keys', { token: orgKey.key, body: { kind: 'organization', mode: 'live' } }),
        403,
        'credential_kind_not_allowed',
      );
      const agent = await addMember(server, owner.organizationId, 'agent');
      assertError(await server.request('POST', '/v1/api-keys', { token: agent.token, body: { kind: 'organization', mode: 'live' } }), 403, 'role_insufficient');
      const admin = await addMember(server, owner.organizationId, 'admin');
      assert.equal((await server.request('POST', '/v1/api-keys', { token: admin.token, body: { kind: 'organization', mode: 'live' } })).status, 201);
    });
  });

  describe('revoke and rotate', () => {
    it('revoking stops the key at once and is recorded; revoking again is invalid_state', async () => {
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      const revoked = await server.request('POST', `/v1/api-keys/${key.id}/revoke`, { token: owner.token });
      assert.equal(revoked.status, 200);
      assert.equal(revoked.body.status, 'revoked');
      assert.ok(revoked.body.revoked_at);
      assertError(await server.request('GET', '/v1/identity', { token: key.key }), 401, 'credential_revoked');
      assertError(await server.request('POST', `/v1/api-keys/${key.id}/revoke`, { token: owner.token }), 409, 'invalid_state');
      const events = await server.request('GET', `/v1/events?target_id=${key.id}&action=api_key.revoked`, { token: owner.token });
      assert.equal(events.body.data.length, 1);
    });

    it('rotating returns a new key once, with the same kind, mode and scopes, and revokes the old', async () => {
      const connection = await createConnection(server, owner);
      const old = await createKey(server, owner.token, {
        kind: 'connection',
        mode: 'live',
        connection_id: connection.id,
        scopes: ['messages:read', 'messages:write'],
      });
      const rotated = await server.request('POST', `/v1/api-keys/${old.id}/rotate`, { token: owner.token });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.id, old.id);
      assert.match(rotated.body.key, /^csk_live_[0-9A-Za-z]{32}$/);
      assert.deepEqual(rotated.body.scopes, ['messages:read', 'messages:write']);
      assert.equal(rotated.body.connection_id, connection.id);
      assertError(await server.request('GET', '/v1/identity', { token: old.key }), 401, 'credential_revoked');
      assert.equal((await server.request('GET', '/v1/identity', { token: rotated.body.key })).status, 200);
      const list = await server.request('GET', '/v1/api-keys?status=revoked', { token: owner.token });
      const oldListed = list.body.data.find((k: { id: string }) => k.id === old.id);
      assert.equal(oldListed.rotated_to, rotated.body.id);
      assertError(await server.request('POST', `/v1/api-keys/${old.id}/rotate`, { token: owner.token }), 409, 'invalid_state');
    });

    it('an organization key holding keys:write can revoke keys', async () => {
      const manager = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      const target = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      assert.equal((await server.request('POST', `/v1/api-keys/${target.id}/revoke`, { token: manager.key })).status, 200);
      const events = await server.request('GET', `/v1/events?target_id=${target.id}&action=api_key.revoked`, { token: owner.token });
      assert.deepEqual(events.body.data[0].actor, { type: 'api_key', id: manager.id });
      assert.deepEqual(events.body.data[0].credential, { type: 'organization_key', id: manager.id });
    });

    it('a test key holding keys:write sees and manages only test keys', async () => {
      const testManager = await createKey(server, owner.token, { kind: 'organization', mode: 'test', scopes: ['keys:write'] });
      const live = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      const list = await server.request('GET', '/v1/api-keys', { token: testManager.key });
      assert.ok(list.body.data.length > 0);
      assert.ok(list.body.data.every((k: { mode: string }) => k.mode === 'test'));
      assertError(await server.request('POST', `/v1/api-keys/${live.id}/revoke`, { token: testManager.key }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/api-keys/${live.id}/rotate`, { token: testManager.key }), 404, 'resource_not_found');
      assert.equal((await server.request('GET', '/v1/identity', { token: live.key })).status, 200);
    });

    it('a key revoked through another process stops working there within a second', async (t) => {
      const other = await startServer(t, { shareStore: server.testStore, clock: server.clock });
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      assert.equal((await other.request('GET', '/v1/identity', { token: key.key })).status, 200);
      assert.equal((await server.request('POST', `/v1/api-keys/${key.id}/revoke`, { token: owner.token })).status, 200);
      server.clock.advance(1000);
      assertError(await other.request('GET', '/v1/identity', { token: key.key }), 401, 'credential_revoked');
    });

    it('an unknown key id is resource_not_found', async () => {
      assertError(await server.request('POST', '/v1/api-keys/key_01J00000000000000000000000/revoke', { token: owner.token }), 404, 'resource_not_found');
    });
  });
});
