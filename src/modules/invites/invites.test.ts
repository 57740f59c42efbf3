import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { DAY, HOUR, MINUTE } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, type SignedUp, signUp, startServerWithOwner, startServerWithTwoOrganizations } from '../../../test/factories.ts';
import { INVITE_MAILS_PER_DAY } from './invites.service.ts';

const PASSWORD = 'a long enough password';

function newEmail(): string {
  return `invitee-${randomBytes(4).toString('hex')}@example.com`;
}

async function invite(server: TestServer, token: string, body: { email: string; role: string }) {
  const response = await server.request('POST', '/v1/invites', { token, body });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

/** The invite mails recorded for an address, oldest first, their text opened (it is sealed at rest). */
async function mailsTo(server: TestServer, email: string) {
  const rows = await server.app.store.db.selectFrom('mails').select('id').where('to_address', '=', email).orderBy('id').execute();
  return Promise.all(rows.map(async (row) => (await server.app.services.mail.find(row.id))!));
}

/** The token of the latest invite mail to `email`, read from the link as the invitee would. */
async function tokenMailedTo(server: TestServer, email: string): Promise<string> {
  const mails = await mailsTo(server, email);
  const link = /http:\/\/localhost:3000\/dashboard\/accept-invite#token=([A-Za-z0-9_-]{43})\n/.exec(mails.at(-1)?.text ?? '');
  assert.ok(link, `an invite mail with the link reached ${email}`);
  return link[1]!;
}

function accept(server: TestServer, body: Record<string, unknown>, bearer?: string) {
  return server.request('POST', '/v1/invites/accept', { body, token: bearer });
}

/** A fresh dashboard token of a signed-up owner, for tests that move the clock past the old one's 15 minutes. */
async function logIn(server: TestServer, person: SignedUp): Promise<string> {
  const response = await server.request('POST', '/auth/login', { body: { email: person.email, password: person.password } });
  assert.equal(response.status, 200, response.text);
  return response.body.token;
}

describe('invites', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  describe('create', () => {
    it('an owner invites an email: 201 with the invite, normalised, valid 7 days, never the token', async () => {
      const email = newEmail();
      const response = await server.request('POST', '/v1/invites', { token: owner.token, body: { email: email.toUpperCase(), role: 'agent' } });
      assert.equal(response.status, 201, response.text);
      const created = response.body;
      assert.match(created.id, /^inv_[0-9A-Z]{26}$/);
      assert.equal(created.object, 'invite');
      assert.equal(created.email, email);
      assert.equal(created.role, 'agent');
      assert.equal(created.status, 'pending');
      assert.equal(created.organization_id, owner.organizationId);
      assert.equal(created.invited_by, owner.memberId);
      assert.equal(created.member_id, null);
      assert.equal(created.expires_at, new Date(server.clock.now().getTime() + 7 * DAY).toISOString());
      assert.equal(created.last_sent_at, server.clock.now().toISOString());

      const token = await tokenMailedTo(server, email);
      assert.ok(!response.text.includes(token), 'the answer never carries the token');
      assert.deepEqual((await server.request('GET', `/v1/invites/${created.id}`, { token: owner.token })).body, created);
    });

    it('the mail names the organization and the inviter and links into the dashboard; only the token hash is stored, and the mail is sealed', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'viewer' });
      const [mail] = await mailsTo(server, email);
      assert.equal(mail!.subject, 'You are invited to join Acme Ltd');
      assert.match(mail!.text, new RegExp(`^${owner.email} invited you to join Acme Ltd as a viewer\\.`));
      const token = await tokenMailedTo(server, email);
      const row = await server.app.store.db.selectFrom('invites').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.equal(row.token_hash, sha256Hex(token));
      assert.ok(!JSON.stringify(row).includes(token));
      const stored = await server.app.store.db.selectFrom('mails').selectAll().where('id', '=', mail!.id).executeTakeFirstOrThrow();
      assert.equal(stored.organization_id, owner.organizationId);
      assert.ok(!JSON.stringify(stored).includes(token), 'the mail record is sealed at rest, the link with it');
    });

    it('is recorded in the audit log', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'admin' });
      const events = await server.request('GET', `/v1/events?target_id=${created.id}`, { token: owner.token });
      assert.equal(events.body.data.length, 1);
      assert.equal(events.body.data[0].action, 'invite.created');
      assert.deepEqual(events.body.data[0].actor, { type: 'member', id: owner.memberId });
      assert.deepEqual(events.body.data[0].data, { email, role: 'admin' });
    });

    it('an admin invites agents and viewers; inviting an admin is role_insufficient on /role, naming the owner', async () => {
      const admin = await addMember(server, owner.organizationId, 'admin');
      await invite(server, admin.token, { email: newEmail(), role: 'agent' });
      await invite(server, admin.token, { email: newEmail(), role: 'viewer' });
      const error = assertError(
        await server.request('POST', '/v1/invites', { token: admin.token, body: { email: newEmail(), role: 'admin' } }),
        403,
        'role_insufficient',
      );
      assert.equal(error.param, '/role');
      assert.deepEqual(error.allowed_roles, ['owner']);
    });

    it('owner is not a role an invite gives: validation_failed on /role', async () => {
      const error = assertError(
        await server.request('POST', '/v1/invites', { token: owner.token, body: { email: newEmail(), role: 'owner' } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/role');
    });

    it('an agent or a viewer may not invite: role_insufficient', async () => {
      for (const role of ['agent', 'viewer'] as const) {
        const member = await addMember(server, owner.organizationId, role);
        const error = assertError(
          await server.request('POST', '/v1/invites', { token: member.token, body: { email: newEmail(), role: 'viewer' } }),
          403,
          'role_insufficient',
        );
        assert.deepEqual(error.allowed_roles, ['owner', 'admin']);
      }
    });

    it("a member's email is resource_exists on /email, whatever its case", async () => {
      const error = assertError(
        await server.request('POST', '/v1/invites', { token: owner.token, body: { email: owner.email.toUpperCase(), role: 'agent' } }),
        409,
        'resource_exists',
      );
      assert.equal(error.param, '/email');
    });

    it('an email with a pending invite is resource_exists on /email, and nothing is mailed', async () => {
      const email = newEmail();
      await invite(server, owner.token, { email, role: 'agent' });
      const error = assertError(await server.request('POST', '/v1/invites', { token: owner.token, body: { email, role: 'viewer' } }), 409, 'resource_exists');
      assert.equal(error.param, '/email');
      assert.equal((await mailsTo(server, email)).length, 1);
    });

    it('two invites of one email at once make one invite: the other is resource_exists', async () => {
      const email = newEmail();
      const send = () => server.request('POST', '/v1/invites', { token: owner.token, body: { email, role: 'agent' } });
      const answers = await Promise.all([send(), send()]);
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409], answers.map((answer) => answer.text).join('\n'));
      assertError(
        answers.find((answer) => answer.status === 409)!,
        409,
        'resource_exists',
      );
      assert.equal((await mailsTo(server, email)).length, 1);
    });

    it('a retry with the same Idempotency-Key answers the first invite again and mails once', async () => {
      const email = newEmail();
      const headers = { 'idempotency-key': `invite-${email}` };
      const first = await server.request('POST', '/v1/invites', { token: owner.token, body: { email, role: 'agent' }, headers });
      const retry = await server.request('POST', '/v1/invites', { token: owner.token, body: { email, role: 'agent' }, headers });
      assert.equal(first.status, 201, first.text);
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotency-replayed'), 'true');
      assert.deepEqual(retry.body, first.body);
      assert.equal((await mailsTo(server, email)).length, 1);
    });
  });

  describe('accept', () => {
    it('a new person sets a password and becomes a member: a dashboard token, the refresh cookie, and a login that works', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'agent' });
      const token = await tokenMailedTo(server, email);
      const response = await accept(server, { token, password: PASSWORD, name: 'Ada' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.object, 'dashboard_token');
      assert.equal(response.body.organization.id, owner.organizationId);
      assert.equal(response.body.member.email, email);
      assert.equal(response.body.member.name, 'Ada');
      assert.equal(response.body.member.role, 'agent');
      const cookie = response.headers.getSetCookie().find((c) => c.startsWith('refresh_token='));
      assert.ok(cookie?.includes('HttpOnly') && cookie.includes('Path=/auth'), 'the refresh cookie is set as at login');

      const identity = await server.request('GET', '/v1/identity', { token: response.body.token });
      assert.equal(identity.status, 200, identity.text);
      assert.equal(identity.body.member.role, 'agent');
      const login = await server.request('POST', '/auth/login', { body: { email, password: PASSWORD } });
      assert.equal(login.status, 200, login.text);

      const accepted = (await server.request('GET', `/v1/invites/${created.id}`, { token: owner.token })).body;
      assert.equal(accepted.status, 'accepted');
      assert.equal(accepted.member_id, response.body.member.id);
      assert.equal(accepted.accepted_at, server.clock.now().toISOString());
      const events = await server.request('GET', `/v1/events?target_id=${created.id}&action=invite.accepted`, { token: owner.token });
      assert.deepEqual(events.body.data[0].actor, { type: 'member', id: response.body.member.id });
      const memberEvents = await server.request('GET', `/v1/events?target_id=${response.body.member.id}&action=member.created`, { token: owner.token });
      assert.deepEqual(
        memberEvents.body.data.map((event: { action: string; data: unknown }) => [event.action, event.data]),
        [['member.created', { role: 'agent', invite_id: created.id }]],
      );
    });

    it('a new person without a password is validation_failed (missing) on /password, and the invite stays pending', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'viewer' });
      const error = assertError(await accept(server, { token: await tokenMailedTo(server, email) }), 400, 'validation_failed');
      assert.equal(error.param, '/password');
      assert.equal(error.details[0].code, 'missing');
      assert.equal((await server.request('GET', `/v1/invites/${created.id}`, { token: owner.token })).body.status, 'pending');
    });

    it('a password shorter than sign-up allows is validation_failed on /password', async () => {
      const email = newEmail();
      await invite(server, owner.token, { email, role: 'viewer' });
      const error = assertError(await accept(server, { token: await tokenMailedTo(server, email), password: 'short' }), 400, 'validation_failed');
      assert.equal(error.param, '/password');
    });

    it('a token used once is invite_expired the second time', async () => {
      const email = newEmail();
      await invite(server, owner.token, { email, role: 'viewer' });
      const token = await tokenMailedTo(server, email);
      assert.equal((await accept(server, { token, password: PASSWORD })).status, 200);
      const error = assertError(await accept(server, { token, password: PASSWORD }), 410, 'invite_expired');
      assert.equal(error.param, '/token');
      assert.match(error.message, /already accepted/);
    });

    it('an unknown token is 404 resource_not_found on /token; a malformed one is validation_failed', async () => {
      const error = assertError(await accept(server, { token: randomBytes(32).toString('base64url'), password: PASSWORD }), 404, 'resource_not_found');
      assert.equal(error.param, '/token');
      assert.equal(assertError(await accept(server, { token: 'abc', password: PASSWORD }), 400, 'validation_failed').param, '/token');
    });

    it('is public: no credential needed, none of the credential kinds asked for', async () => {
      const email = newEmail();
      await invite(server, owner.token, { email, role: 'viewer' });
      const response = await server.request('POST', '/v1/invites/accept', { body: { token: await tokenMailedTo(server, email), password: PASSWORD } });
      assert.equal(response.status, 200, response.text);
    });

    it('two accepts of one token at once make exactly one member', async () => {
      const email = newEmail();
      await invite(server, owner.token, { email, role: 'agent' });
      const token = await tokenMailedTo(server, email);
      const answers = await Promise.all([accept(server, { token, password: PASSWORD }), accept(server, { token, password: PASSWORD })]);
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 410], answers.map((answer) => answer.text).join('\n'));
      assertError(
        answers.find((answer) => answer.status === 410)!,
        410,
        'invite_expired',
      );
      const members = await server.request('GET', '/v1/members?limit=100', { token: owner.token });
      assert.equal(members.body.data.filter((member: { email: string }) => member.email === email).length, 1);
      const users = await server.app.store.db.selectFrom('users').select('id').where('email', '=', email).execute();
      assert.equal(users.length, 1);
    });
  });

  describe('accept: a person who already has an account', () => {
    let other: SignedUp;
    let email: string;
    let inviteId: string;
    let token: string;
    before(async () => {
      // Another organization's owner, invited here as an admin.
      other = await signUp(server, { organizationName: 'Other Ltd' });
      email = other.email;
      inviteId = (await invite(server, owner.token, { email, role: 'admin' })).id;
      token = await tokenMailedTo(server, email);
    });

    it('without a dashboard token is credential_missing, naming the Authorization header', async () => {
      const error = assertError(await accept(server, { token }), 401, 'credential_missing');
      assert.equal(error.param, '/header/authorization');
    });

    it("with another person's dashboard token is credential_invalid", async () => {
      assertError(await accept(server, { token }, owner.token), 401, 'credential_invalid');
    });

    it('with a key instead of a dashboard token, or a token that is not one, is credential_invalid', async () => {
      assertError(await accept(server, { token }, 'cok_live_' + 'A'.repeat(32)), 401, 'credential_invalid');
      assertError(await accept(server, { token }, 'dtk_' + 'x'.repeat(43)), 401, 'credential_invalid');
    });

    it('with a password as well is validation_failed on /password: the account exists already', async () => {
      assert.equal(assertError(await accept(server, { token, password: PASSWORD }, other.token), 400, 'validation_failed').param, '/password');
    });

    it('with their own dashboard token, of their other organization, joins this one; their login still opens the first', async () => {
      const response = await accept(server, { token }, other.token);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.organization.id, owner.organizationId);
      assert.equal(response.body.member.role, 'admin');
      assert.equal(response.body.member.email, email);
      const invited = (await server.request('GET', `/v1/invites/${inviteId}`, { token: owner.token })).body;
      assert.equal(invited.status, 'accepted');
      const login = await server.request('POST', '/auth/login', { body: { email, password: other.password } });
      assert.equal(login.body.organization.id, other.organizationId);
      const here = await server.request('POST', '/auth/login', { body: { email, password: other.password, organization_id: owner.organizationId } });
      assert.equal(here.body.member.role, 'admin');
    });
  });

  describe('resend and revoke', () => {
    it('resend mails a new link valid 7 more days; the old link is invite_expired, the new one works', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'agent' });
      const oldToken = await tokenMailedTo(server, email);
      const resent = await server.request('POST', `/v1/invites/${created.id}/resend`, { token: owner.token });
      assert.equal(resent.status, 200, resent.text);
      assert.equal(resent.body.status, 'pending');
      const newToken = await tokenMailedTo(server, email);
      assert.notEqual(newToken, oldToken);
      assert.equal((await mailsTo(server, email)).length, 2);
      assert.ok(!resent.text.includes(newToken));
      const error = assertError(await accept(server, { token: oldToken, password: PASSWORD }), 410, 'invite_expired');
      assert.match(error.message, /replaced/);
      assert.equal((await accept(server, { token: newToken, password: PASSWORD })).status, 200);
      const events = await server.request('GET', `/v1/events?target_id=${created.id}&action=invite.resent`, { token: owner.token });
      assert.equal(events.body.data.length, 1);
    });

    it('resending an accepted or a revoked invite is invalid_state', async () => {
      const acceptedEmail = newEmail();
      const accepted = await invite(server, owner.token, { email: acceptedEmail, role: 'agent' });
      assert.equal((await accept(server, { token: await tokenMailedTo(server, acceptedEmail), password: PASSWORD })).status, 200);
      assertError(await server.request('POST', `/v1/invites/${accepted.id}/resend`, { token: owner.token }), 409, 'invalid_state');

      const revoked = await invite(server, owner.token, { email: newEmail(), role: 'agent' });
      assert.equal((await server.request('DELETE', `/v1/invites/${revoked.id}`, { token: owner.token })).status, 200);
      assertError(await server.request('POST', `/v1/invites/${revoked.id}/resend`, { token: owner.token }), 409, 'invalid_state');
    });

    it('DELETE revokes: its link is invite_expired, the email may be invited again, and a second DELETE is invalid_state', async () => {
      const email = newEmail();
      const created = await invite(server, owner.token, { email, role: 'viewer' });
      const token = await tokenMailedTo(server, email);
      const revoked = await server.request('DELETE', `/v1/invites/${created.id}`, { token: owner.token });
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(revoked.body.status, 'revoked');
      assert.equal(revoked.body.revoked_at, server.clock.now().toISOString());
      assert.match(assertError(await accept(server, { token, password: PASSWORD }), 410, 'invite_expired').message, /revoked/);
      assertError(await server.request('DELETE', `/v1/invites/${created.id}`, { token: owner.token }), 409, 'invalid_state');
      await invite(server, owner.token, { email, role: 'viewer' });
      const events = await server.request('GET', `/v1/events?target_id=${created.id}&action=invite.revoked`, { token: owner.token });
      assert.equal(events.body.data.length, 1);
    });

    it("an admin may not resend or revoke an owner's invite of an admin: role_insufficient", async () => {
      const admin = await addMember(server, owner.organizationId, 'admin');
      const created = await invite(server, owner.token, { email: newEmail(), role: 'admin' });
      assertError(await server.request('POST', `/v1/invites/${created.id}/resend`, { token: admin.token }), 403, 'role_insufficient');
      assertError(await server.request('DELETE', `/v1/invites/${created.id}`, { token: admin.token }), 403, 'role_insufficient');
      assert.equal((await server.request('GET', `/v1/invites/${created.id}`, { token: admin.token })).body.status, 'pending');
    });
  });
});

describe('invites across organizations', () => {
  let server: TestServer;
  let alpha: SignedUp;
  let beta: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, alpha, beta } = await startServerWithTwoOrganizations(suite)));

  it("another organization's invite is 404 to read, resend and revoke, and absent from the list", async () => {
    const betaInvite = await invite(server, beta.token, { email: newEmail(), role: 'agent' });
    assertError(await server.request('GET', `/v1/invites/${betaInvite.id}`, { token: alpha.token }), 404, 'resource_not_found');
    assertError(await server.request('POST', `/v1/invites/${betaInvite.id}/resend`, { token: alpha.token }), 404, 'resource_not_found');
    assertError(await server.request('DELETE', `/v1/invites/${betaInvite.id}`, { token: alpha.token }), 404, 'resource_not_found');
    const list = await server.request('GET', '/v1/invites', { token: alpha.token });
    assert.ok(list.body.data.every((item: { id: string }) => item.id !== betaInvite.id));
    assert.equal((await server.request('GET', `/v1/invites/${betaInvite.id}`, { token: beta.token })).body.status, 'pending');
  });

  it('the same email may be invited by two organizations at once', async () => {
    const email = newEmail();
    await invite(server, alpha.token, { email, role: 'agent' });
    await invite(server, beta.token, { email, role: 'agent' });
  });
});

describe('invites over time', () => {
  it('an invite past 7 days is expired: its link is invite_expired, and a resend gives a new week', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const email = newEmail();
    const created = await invite(server, owner.token, { email, role: 'agent' });
    const token = await tokenMailedTo(server, email);
    server.clock.advance(7 * DAY);
    const fresh = await logIn(server, owner);
    assert.equal((await server.request('GET', `/v1/invites/${created.id}`, { token: fresh })).body.status, 'expired');
    assert.match(assertError(await accept(server, { token, password: PASSWORD }), 410, 'invite_expired').message, /expired/);

    const resent = await server.request('POST', `/v1/invites/${created.id}/resend`, { token: fresh });
    assert.equal(resent.status, 200, resent.text);
    assert.equal(resent.body.status, 'pending');
    assert.equal(resent.body.expires_at, new Date(server.clock.now().getTime() + 7 * DAY).toISOString());
    assert.equal((await accept(server, { token: await tokenMailedTo(server, email), password: PASSWORD })).status, 200);
  });

  it('once an invite expired, the email may be invited again; the new invite replaces it', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const email = newEmail();
    const first = await invite(server, owner.token, { email, role: 'agent' });
    server.clock.advance(7 * DAY + MINUTE);
    const fresh = await logIn(server, owner);
    const second = await invite(server, fresh, { email, role: 'viewer' });
    assert.equal((await server.request('GET', `/v1/invites/${first.id}`, { token: fresh })).body.status, 'expired');
    // The replaced invite cannot come back beside the new one.
    const error = assertError(await server.request('POST', `/v1/invites/${first.id}/resend`, { token: fresh }), 409, 'resource_exists');
    assert.match(error.message, /newer pending invite/);
    const accepted = await accept(server, { token: await tokenMailedTo(server, email), password: PASSWORD });
    assert.equal(accepted.body.member.role, 'viewer');
    assert.equal((await server.request('GET', `/v1/invites/${second.id}`, { token: fresh })).body.status, 'accepted');
  });

  it('lists by status, expired derived from the clock', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const expiring = await invite(server, owner.token, { email: newEmail(), role: 'agent' });
    server.clock.advance(7 * DAY);
    const fresh = await logIn(server, owner);
    const pending = await invite(server, fresh, { email: newEmail(), role: 'agent' });
    const revoked = await invite(server, fresh, { email: newEmail(), role: 'agent' });
    assert.equal((await server.request('DELETE', `/v1/invites/${revoked.id}`, { token: fresh })).status, 200);
    const acceptedEmail = newEmail();
    const accepted = await invite(server, fresh, { email: acceptedEmail, role: 'viewer' });
    assert.equal((await accept(server, { token: await tokenMailedTo(server, acceptedEmail), password: PASSWORD })).status, 200);

    const ids = async (query: string) =>
      (await server.request('GET', `/v1/invites${query}`, { token: fresh })).body.data.map((item: { id: string }) => item.id) as string[];
    assert.deepEqual(await ids(''), [accepted.id, revoked.id, pending.id, expiring.id]);
    assert.deepEqual(await ids('?status=pending'), [pending.id]);
    assert.deepEqual(await ids('?status=expired'), [expiring.id]);
    assert.deepEqual(await ids('?status=revoked'), [revoked.id]);
    assert.deepEqual(await ids('?status=accepted'), [accepted.id]);
    assert.deepEqual(await ids(`?limit=1&order=asc&after=${expiring.id}`), [pending.id]);
    assert.equal(
      assertError(await server.request('GET', `/v1/invites?status=pending&after=${expiring.id}`, { token: fresh }), 400, 'validation_failed').param,
      '/query/after',
    );
  });

  it(`an invite mail past ${INVITE_MAILS_PER_DAY} in 24 hours is rate_limited with Retry-After, until the oldest leave the window`, async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const half = INVITE_MAILS_PER_DAY / 2;
    let first: { id: string } | undefined;
    for (let i = 0; i < half; i++) first = await invite(server, owner.token, { email: newEmail(), role: 'viewer' });
    server.clock.advance(10 * MINUTE);
    for (let i = 0; i < half - 1; i++) await invite(server, owner.token, { email: newEmail(), role: 'viewer' });
    // A resend counts as a mail too: it makes the hundredth.
    assert.equal((await server.request('POST', `/v1/invites/${first!.id}/resend`, { token: owner.token })).status, 200);

    const refused = await server.request('POST', '/v1/invites', { token: owner.token, body: { email: newEmail(), role: 'viewer' } });
    assertError(refused, 429, 'rate_limited');
    assert.equal(refused.headers.get('retry-after'), String((DAY - 10 * MINUTE) / 1000));
    assertError(await server.request('POST', `/v1/invites/${first!.id}/resend`, { token: owner.token }), 429, 'rate_limited');

    server.clock.advance(DAY - 10 * MINUTE - HOUR);
    assertError(
      await server.request('POST', '/v1/invites', { token: await logIn(server, owner), body: { email: newEmail(), role: 'viewer' } }),
      429,
      'rate_limited',
    );
    server.clock.advance(HOUR);
    await invite(server, await logIn(server, owner), { email: newEmail(), role: 'viewer' });
  });
});
