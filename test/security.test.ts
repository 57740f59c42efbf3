/**
 * Security properties that must hold on every route, driven by the routes' own access declarations
 * so that a route added later is covered without touching this file.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DAY } from '../src/lib/clock.ts';
import { SCOPES } from '../src/modules/credentials/scopes.schemas.ts';
import { suiteScope, type TestServer } from './harness.ts';
import { addMember, assertError, createConnection, createKey, type SignedUp, startServerWithOwner, startServerWithTwoOrganizations } from './factories.ts';

const concrete = (url: string) => url.replace(/:(\w+)/g, 'x');

describe('security on every route', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  it('every /v1 route declares an access rule, and only documented ones are public', () => {
    const publicV1 = server.app.accessTable.filter((row) => row.url.startsWith('/v1/') && row.access.public).map((row) => row.url);
    // Accepting an invite is how a person without a credential of the organization gets one.
    assert.deepEqual(publicV1.sort(), ['/v1/invites/accept', '/v1/openapi.json']);
  });

  it('every protected route refuses a request without a credential', async () => {
    for (const row of server.app.accessTable.filter((r) => !r.access.public)) {
      const response = await server.request(row.method, concrete(row.url), row.method === 'GET' ? {} : { body: {} });
      assertError(response, 401, 'credential_missing');
    }
  });

  it('every scoped route refuses an organization key that lacks its scope', async () => {
    for (const row of server.app.accessTable) {
      if (row.access.public || !row.access.scope) continue;
      if (row.access.credentials && !row.access.credentials.includes('organization_key')) continue;
      const required = row.access.scope;
      const other = SCOPES.find((scope) => scope !== required && scope !== 'runtime:proxy')!;
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: [other] });
      const error = assertError(
        await server.request(row.method, concrete(row.url), { token: key.key, ...(row.method === 'GET' ? {} : { body: {} }) }),
        403,
        'scope_missing',
      );
      assert.equal(error.required_scope, required);
    }
  });

  it('every route limited to some credential kinds refuses the others', async () => {
    const connection = await createConnection(server, owner);
    const credentials = {
      organization_key: (await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write', 'connections:read'] })).key,
      connection_key: (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id })).key,
    };
    for (const row of server.app.accessTable) {
      if (row.access.public || !row.access.credentials) continue;
      for (const [kind, token] of Object.entries(credentials)) {
        if (row.access.credentials.includes(kind as never)) continue;
        const response = await server.request(row.method, concrete(row.url), { token, ...(row.method === 'GET' ? {} : { body: {} }) });
        if (row.access.otherKinds === 'unauthenticated') assertError(response, 401, 'credential_invalid');
        else assertError(response, 403, 'credential_kind_not_allowed');
      }
    }
  });

  it('every role-restricted route refuses a viewer', async () => {
    const viewer = await addMember(server, owner.organizationId, 'viewer');
    for (const row of server.app.accessTable) {
      if (row.access.public || !row.access.roles || row.access.roles.includes('viewer')) continue;
      const response = await server.request(row.method, concrete(row.url), { token: viewer.token, ...(row.method === 'GET' ? {} : { body: {} }) });
      assertError(response, 403, 'role_insufficient');
    }
  });
});

describe('credentials that must be refused', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  for (const [name, header] of [
    ['a Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['an empty bearer', 'Bearer '],
    ['a bearer with spaces', 'Bearer csk live x'],
  ] as const) {
    it(`${name} is credential_invalid`, async () => {
      assertError(await server.request('GET', '/v1/identity', { headers: { authorization: header } }), 401, 'credential_invalid');
    });
  }

  for (const [name, token] of [
    ['a malformed key', 'cok_live_short'],
    ['a well-formed key that was never issued', 'cok_live_' + 'A'.repeat(32)],
    ['an unknown dashboard token', 'dtk_' + 'x'.repeat(43)],
    ['an unknown OAuth token', 'oat_' + 'x'.repeat(43)],
    ['a string of another service', 'sk_live_123'],
    ['an oversized credential', 'cok_live_' + 'A'.repeat(600)],
  ] as const) {
    it(`${name} is credential_invalid`, async () => {
      assertError(await server.request('GET', '/v1/identity', { token }), 401, 'credential_invalid');
    });
  }

  it('a revoked key is credential_revoked', async () => {
    const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
    assert.equal((await server.request('POST', `/v1/api-keys/${key.id}/revoke`, { token: owner.token })).status, 200);
    assertError(await server.request('GET', '/v1/identity', { token: key.key }), 401, 'credential_revoked');
  });

  it('an expired OAuth token is credential_expired, a revoked one credential_revoked', async () => {
    const issue = () =>
      server.app.store.db
        .transaction()
        .execute((trx) =>
          server.app.services.oauthTokens.issue(trx, { organizationId: owner.organizationId, clientName: 'CRM', scopes: ['messages:read'], ttlMs: DAY }),
        );
    const expiring = await issue();
    assert.equal((await server.request('GET', '/v1/identity', { token: expiring.token })).status, 200);
    server.clock.advance(DAY);
    assertError(await server.request('GET', '/v1/identity', { token: expiring.token }), 401, 'credential_expired');
    const revoked = await issue();
    await server.app.services.oauthTokens.revoke(owner.organizationId, revoked.id);
    assertError(await server.request('GET', '/v1/identity', { token: revoked.token }), 401, 'credential_revoked');
  });

  it('an OAuth token can never be given keys:write', async () => {
    await assert.rejects(
      server.app.store.db
        .transaction()
        .execute((trx) =>
          server.app.services.oauthTokens.issue(trx, { organizationId: owner.organizationId, clientName: 'CRM', scopes: ['keys:write'], ttlMs: DAY }),
        ),
      (error: Error & { code?: string }) => error.code === 'validation_failed',
    );
  });

  it('an OAuth token is refused where key management is', async () => {
    const oauth = await server.app.store.db.transaction().execute((trx) =>
      server.app.services.oauthTokens.issue(trx, {
        organizationId: owner.organizationId,
        clientName: 'CRM',
        scopes: ['connections:read'],
        ttlMs: DAY,
      }),
    );
    assertError(await server.request('GET', '/v1/api-keys', { token: oauth.token }), 403, 'credential_kind_not_allowed');
  });
});

describe('tenant isolation', () => {
  let server: TestServer;
  let alpha: SignedUp;
  let beta: SignedUp;
  const suite = suiteScope();
  before(async () => {
    ({ server, alpha, beta } = await startServerWithTwoOrganizations(suite));
  });

  it("organization A's credentials get 404 on every id of organization B, and see none of B's data", async () => {
    const betaConnection = await createConnection(server, beta);
    const betaKey = await createKey(server, beta.token, { kind: 'organization', mode: 'live', scopes: ['keys:write', 'connections:read'] });
    const betaEvents = await server.request('GET', '/v1/events', { token: beta.token });
    const betaEvent = betaEvents.body.data[0].id;
    const alphaKey = await createKey(server, alpha.token, {
      kind: 'organization',
      mode: 'live',
      scopes: ['keys:write', 'connections:read', 'connections:write'],
    });

    for (const token of [alpha.token, alphaKey.key]) {
      assertError(await server.request('GET', `/v1/connections/${betaConnection.id}`, { token }), 404, 'resource_not_found');
      assertError(await server.request('PATCH', `/v1/connections/${betaConnection.id}`, { token, body: { name: 'mine now' } }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/api-keys/${betaKey.id}/revoke`, { token }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/api-keys/${betaKey.id}/rotate`, { token }), 404, 'resource_not_found');
      const keys = await server.request('GET', '/v1/api-keys', { token });
      assert.ok(keys.body.data.every((k: { id: string }) => k.id !== betaKey.id));
      const connections = await server.request('GET', '/v1/connections', { token });
      assert.ok(connections.body.data.every((c: { id: string }) => c.id !== betaConnection.id));
    }
    assertError(await server.request('GET', `/v1/events/${betaEvent}`, { token: alpha.token }), 404, 'resource_not_found');
    assertError(await server.request('GET', `/v1/members/${beta.memberId}`, { token: alpha.token }), 404, 'resource_not_found');
    // B's key still works: nothing of B was changed by A's attempts.
    assert.equal((await server.request('GET', '/v1/identity', { token: betaKey.key })).status, 200);
    assert.equal((await server.request('GET', `/v1/connections/${betaConnection.id}`, { token: beta.token })).body.name, 'Support line');
  });

  it("a connection key sees only its own connection: another connection's id is 404", async () => {
    const mine = await createConnection(server, alpha);
    const other = await createConnection(server, alpha);
    const key = await createKey(server, alpha.token, { kind: 'connection', mode: 'live', connection_id: mine.id });
    assert.equal((await server.request('GET', `/v1/connections/${mine.id}`, { token: key.key })).status, 200);
    assertError(await server.request('GET', `/v1/connections/${other.id}`, { token: key.key }), 404, 'resource_not_found');
    const list = await server.request('GET', '/v1/connections', { token: key.key });
    assert.deepEqual(
      list.body.data.map((c: { id: string }) => c.id),
      [mine.id],
    );
  });

  it('a test key is refused on a live connection; a live organization key reaches test connections too', async () => {
    const live = await createConnection(server, alpha, { test: false });
    const test = await createConnection(server, alpha, { test: true });
    const testKey = await createKey(server, alpha.token, { kind: 'organization', mode: 'test' });
    const liveKey = await createKey(server, alpha.token, { kind: 'organization', mode: 'live' });
    const refused = assertError(await server.request('GET', `/v1/connections/${live.id}`, { token: testKey.key }), 403, 'test_key_on_live_connection');
    assert.equal(refused.type, 'permission_error');
    assertError(await server.request('PATCH', `/v1/connections/${live.id}`, { token: testKey.key, body: { name: 'x' } }), 403, 'test_key_on_live_connection');
    assert.equal((await server.request('GET', `/v1/connections/${test.id}`, { token: liveKey.key })).status, 200);
    assert.equal(
      (await server.request('PATCH', `/v1/connections/${test.id}`, { token: liveKey.key, body: { name: 'Renamed by a live key' } })).body.name,
      'Renamed by a live key',
    );
    assert.equal((await server.request('GET', `/v1/connections/${test.id}`, { token: testKey.key })).status, 200);
    const testList = await server.request('GET', '/v1/connections', { token: testKey.key });
    assert.ok(testList.body.data.every((c: { test: boolean }) => c.test));
    const liveList = (await server.request('GET', '/v1/connections?limit=100', { token: liveKey.key })).body.data.map((c: { id: string }) => c.id);
    assert.ok(liveList.includes(live.id) && liveList.includes(test.id), 'a live organization key lists live and test connections');
    const identity = await server.request('GET', '/v1/identity', { token: testKey.key });
    assert.equal(identity.body.mode, 'test');
    assert.equal(identity.body.organization.id, alpha.organizationId);
  });
});
