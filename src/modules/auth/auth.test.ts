import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MINUTE, DAY, SECOND } from '../../lib/clock.ts';
import { REFRESH_REUSE_GRACE_MS, SESSION_CACHE_TTL_MS } from './auth.service.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, signUp } from '../../../test/factories.ts';

describe('auth: sign-up, login, refresh, logout', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
  });

  describe('happy path', () => {
    it('sign-up creates an organization, its owner and a 15-minute dashboard token', async () => {
      const response = await server.request('POST', '/auth/signup', {
        body: { email: 'Founder@Example.com', password: 'a long enough password', organization_name: 'Founders' },
      });
      assert.equal(response.status, 201);
      assert.match(response.body.token, /^dtk_/);
      assert.equal(response.body.organization.name, 'Founders');
      assert.match(response.body.organization.id, /^org_[0-9A-Z]{26}$/);
      assert.equal(response.body.member.role, 'owner');
      assert.equal(response.body.member.email, 'founder@example.com');
      assert.equal(new Date(response.body.expires_at).getTime() - server.clock.now().getTime(), 15 * MINUTE);
      const cookie = response.headers.getSetCookie().find((c) => c.startsWith('refresh_token='))!;
      assert.match(cookie, /HttpOnly/i);
      assert.match(cookie, /SameSite=Strict/i);
      assert.match(cookie, /Path=\/auth/);
    });

    it('the dashboard token identifies the member with the role’s scopes', async () => {
      const owner = await signUp(server);
      const identity = await server.request('GET', '/v1/identity', { token: owner.token });
      assert.equal(identity.status, 200);
      assert.equal(identity.body.credential.kind, 'dashboard_token');
      assert.equal(identity.body.member.id, owner.memberId);
      assert.equal(identity.body.mode, null);
      assert.ok(identity.body.scopes.includes('keys:write'));
    });

    it('login with the right password returns a new dashboard token', async () => {
      const owner = await signUp(server);
      const response = await server.request('POST', '/auth/login', { body: { email: owner.email.toUpperCase(), password: owner.password } });
      assert.equal(response.status, 200);
      assert.notEqual(response.body.token, owner.token);
      assert.equal(response.body.member.id, owner.memberId);
    });

    it('refresh exchanges the cookie for a new token and rotates the cookie', async () => {
      const owner = await signUp(server);
      const refreshed = await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } });
      assert.equal(refreshed.status, 200);
      assert.match(refreshed.body.token, /^dtk_/);
      const newCookie = refreshed.headers
        .getSetCookie()
        .find((c) => c.startsWith('refresh_token='))!
        .split(';')[0]!;
      assert.notEqual(newCookie, owner.refreshCookie);
      // The old refresh token was used up by the rotation.
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } }), 401, 'credential_invalid');
      assert.equal((await server.request('POST', '/auth/refresh', { headers: { cookie: newCookie } })).status, 200);
    });

    it('a replaced refresh token presented after the grace ends the session for both holders', async () => {
      const owner = await signUp(server);
      const refreshed = await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } });
      const current = refreshed.headers
        .getSetCookie()
        .find((c) => c.startsWith('refresh_token='))!
        .split(';')[0]!;
      // Within the grace: another tab refreshing at the same moment, refused and nothing more.
      server.clock.advance(REFRESH_REUSE_GRACE_MS - SECOND);
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } }), 401, 'credential_invalid');
      assert.equal((await server.request('GET', '/v1/identity', { token: refreshed.body.token })).status, 200);
      // Later: the old token is in someone else's hands; nobody can tell whose, so the session ends.
      server.clock.advance(2 * SECOND);
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } }), 401, 'credential_revoked');
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: current } }), 401, 'credential_revoked');
      assertError(await server.request('GET', '/v1/identity', { token: refreshed.body.token }), 401, 'credential_revoked');
    });

    it('logout ends the session: its token and its refresh cookie stop working', async () => {
      const owner = await signUp(server);
      const response = await server.request('POST', '/auth/logout', { headers: { cookie: owner.refreshCookie } });
      assert.equal(response.status, 200);
      assert.equal(response.body.revoked, true);
      assertError(await server.request('GET', '/v1/identity', { token: owner.token }), 401, 'credential_revoked');
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } }), 401, 'credential_revoked');
      const again = await server.request('POST', '/auth/logout', { headers: { cookie: owner.refreshCookie } });
      assert.equal(again.body.revoked, false, 'a second logout finds nothing to end');
    });

    it('logins and logouts are in the audit log', async () => {
      const owner = await signUp(server);
      const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      await server.request('POST', '/auth/logout', { headers: { authorization: `Bearer ${login.body.token}` } });
      const events = await server.request('GET', '/v1/events', { token: owner.token });
      assert.deepEqual(
        events.body.data.slice(0, 2).map((e: { action: string }) => e.action),
        ['session.revoked', 'session.created'],
      );
    });
  });

  describe('time', () => {
    it('a dashboard token expires after 15 minutes and refresh renews it', async () => {
      const owner = await signUp(server);
      server.clock.advance(15 * MINUTE - 1000);
      assert.equal((await server.request('GET', '/v1/identity', { token: owner.token })).status, 200);
      server.clock.advance(1000);
      assertError(await server.request('GET', '/v1/identity', { token: owner.token }), 401, 'credential_expired');
      const refreshed = await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } });
      assert.equal((await server.request('GET', '/v1/identity', { token: refreshed.body.token })).status, 200);
    });

    it('a refresh token expires after 30 days', async () => {
      const owner = await signUp(server);
      server.clock.advance(30 * DAY);
      assertError(await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } }), 401, 'credential_expired');
    });
  });

  describe('sessions remembered for a second, members read on every request', () => {
    const setRole = (on: TestServer, organizationId: string, memberId: string, role: 'admin' | 'agent' | 'viewer') =>
      on.app.store.db.transaction().execute((trx) => on.app.services.members.setRole(trx, organizationId, memberId, role));

    it('a role change takes effect on the member’s very next request', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      assert.equal((await server.request('GET', '/v1/invites', { token: admin.token })).status, 200);
      await setRole(server, owner.organizationId, admin.memberId, 'viewer');
      assertError(await server.request('GET', '/v1/invites', { token: admin.token }), 403, 'role_insufficient');
      const identity = await server.request('GET', '/v1/identity', { token: admin.token });
      assert.equal(identity.body.member.role, 'viewer');
      assert.ok(!identity.body.scopes.includes('keys:write'));
    });

    it('a role change or a removal made by another process binds the member’s very next request there too', async (t) => {
      const other = await startServer(t, { shareStore: server.testStore, clock: server.clock });
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      assert.equal((await other.request('GET', '/v1/invites', { token: admin.token })).status, 200);
      await setRole(server, owner.organizationId, admin.memberId, 'agent');
      assertError(await other.request('GET', '/v1/invites', { token: admin.token }), 403, 'role_insufficient');
      assert.equal((await other.request('GET', '/v1/identity', { token: admin.token })).status, 200);
      assert.equal((await server.request('DELETE', `/v1/members/${admin.memberId}`, { token: owner.token })).status, 200);
      assertError(await other.request('GET', '/v1/identity', { token: admin.token }), 401, 'credential_revoked');
    });

    it('refreshing stops the old dashboard token at once', async () => {
      const owner = await signUp(server);
      assert.equal((await server.request('GET', '/v1/identity', { token: owner.token })).status, 200);
      const refreshed = await server.request('POST', '/auth/refresh', { headers: { cookie: owner.refreshCookie } });
      assert.equal(refreshed.status, 200);
      assertError(await server.request('GET', '/v1/identity', { token: owner.token }), 401, 'credential_invalid');
    });

    it('a logout through another process stops the token there within a second', async (t) => {
      const other = await startServer(t, { shareStore: server.testStore, clock: server.clock });
      const owner = await signUp(server);
      assert.equal((await other.request('GET', '/v1/identity', { token: owner.token })).status, 200);
      assert.equal((await server.request('POST', '/auth/logout', { headers: { cookie: owner.refreshCookie } })).status, 200);
      assertError(await server.request('GET', '/v1/identity', { token: owner.token }), 401, 'credential_revoked');
      server.clock.advance(SESSION_CACHE_TTL_MS);
      assertError(await other.request('GET', '/v1/identity', { token: owner.token }), 401, 'credential_revoked');
    });
  });

  describe('errors', () => {
    it('a wrong password and an unknown email get the same answer', async () => {
      const owner = await signUp(server);
      const wrong = assertError(
        await server.request('POST', '/auth/login', { body: { email: owner.email, password: 'not the password' } }),
        401,
        'login_failed',
      );
      const unknown = assertError(
        await server.request('POST', '/auth/login', { body: { email: 'nobody@example.com', password: 'whatever it is' } }),
        401,
        'login_failed',
      );
      assert.equal(wrong.message, unknown.message);
    });

    it('signing up twice with one email is refused with resource_exists on /email', async () => {
      const owner = await signUp(server);
      const error = assertError(
        await server.request('POST', '/auth/signup', { body: { email: owner.email, password: 'another long password', organization_name: 'Two' } }),
        409,
        'resource_exists',
      );
      assert.equal(error.param, '/email');
    });

    it('sign-up validates every field and rejects unknown ones', async () => {
      const error = assertError(
        await server.request('POST', '/auth/signup', { body: { email: 'not-an-email', password: 'short', organization_name: '', admin: true } }),
        400,
        'validation_failed',
      );
      const params = error.details.map((d: { param: string }) => d.param).sort();
      assert.deepEqual(params, ['/admin', '/email', '/organization_name', '/password']);
    });

    it('refresh without a cookie is credential_missing', async () => {
      assertError(await server.request('POST', '/auth/refresh'), 401, 'credential_missing');
    });
  });
});
