import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MINUTE } from '../../lib/clock.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, inbound, signUp, startServerWithTwoOrganizations, type SignedUp } from '../../../test/factories.ts';

describe('members: roles, removal, leaving and ownership', () => {
  let server: TestServer;
  let alpha: SignedUp;
  let beta: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, alpha, beta } = await startServerWithTwoOrganizations(suite)));

  const patch = (token: string, id: string, body: unknown) => server.request('PATCH', `/v1/members/${id}`, { token, body });
  const remove = (token: string, id: string) => server.request('DELETE', `/v1/members/${id}`, { token });
  const transfer = (token: string, body: unknown) => server.request('POST', '/v1/organization/transfer-ownership', { token, body });
  const auditActions = async (organizationId: string) =>
    (
      await server.app.store.db
        .selectFrom('audit_events')
        .select(['action', 'target_id', 'data'])
        .where('organization_id', '=', organizationId)
        .orderBy('id')
        .execute()
    ).map((row) => ({ action: row.action, target: row.target_id, data: JSON.parse(row.data) as Record<string, unknown> }));

  describe('changing a role', () => {
    it('the owner changes an admin to an agent: answered at once, taking effect on their next request, audited', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      assert.equal((await server.request('GET', '/v1/invites', { token: admin.token })).status, 200);
      const changed = await patch(owner.token, admin.memberId, { role: 'agent' });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.body.role, 'agent');
      assertError(await server.request('GET', '/v1/invites', { token: admin.token }), 403, 'role_insufficient');
      // Seeing the organization's members is every member's, whatever the role.
      assert.equal((await server.request('GET', '/v1/members', { token: admin.token })).status, 200);
      assert.equal((await server.request('GET', '/v1/identity', { token: admin.token })).body.member.role, 'agent');
      const entry = (await auditActions(owner.organizationId)).find((row) => row.action === 'member.role_changed');
      assert.deepEqual(entry, { action: 'member.role_changed', target: admin.memberId, data: { from: 'admin', to: 'agent' } });
    });

    it('the same role again changes nothing and answers the member', async () => {
      const owner = await signUp(server);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const again = await patch(owner.token, agent.memberId, { role: 'agent' });
      assert.equal(again.status, 200);
      assert.equal((await auditActions(owner.organizationId)).filter((row) => row.action === 'member.role_changed').length, 0);
    });

    it('an admin manages only agents and viewers, and grants only those roles', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const otherAdmin = await addMember(server, owner.organizationId, 'admin');
      const agent = await addMember(server, owner.organizationId, 'agent');
      assert.equal((await patch(admin.token, agent.memberId, { role: 'viewer' })).status, 200);
      const promote = assertError(await patch(admin.token, agent.memberId, { role: 'admin' }), 403, 'role_insufficient');
      assert.equal(promote.param, '/role');
      assertError(await patch(admin.token, otherAdmin.memberId, { role: 'agent' }), 403, 'role_insufficient');
      assertError(await patch(admin.token, admin.memberId, { role: 'agent' }), 403, 'role_insufficient');
      assertError(await patch(admin.token, owner.memberId, { role: 'agent' }), 409, 'owner_immutable');
    });

    it('the owner cannot demote themselves, nor can anyone make an owner by a role change', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      assertError(await patch(owner.token, owner.memberId, { role: 'admin' }), 409, 'owner_immutable');
      const owning = assertError(await patch(owner.token, admin.memberId, { role: 'owner' }), 400, 'validation_failed');
      assert.equal(owning.param, '/role');
      for (const body of [{}, { role: 'boss' }, { role: 'agent', extra: 1 }])
        assertError(await patch(owner.token, admin.memberId, body), 400, 'validation_failed');
    });

    it('agents and viewers cannot change roles; another organization’s member is not found', async () => {
      const owner = await signUp(server);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assertError(await patch(agent.token, viewer.memberId, { role: 'agent' }), 403, 'role_insufficient');
      assertError(await patch(viewer.token, agent.memberId, { role: 'viewer' }), 403, 'role_insufficient');
      const stranger = await addMember(server, beta.organizationId, 'agent');
      assertError(await patch(owner.token, stranger.memberId, { role: 'viewer' }), 404, 'resource_not_found');
      assertError(await patch(alpha.token, stranger.memberId, { role: 'viewer' }), 404, 'resource_not_found');
    });
  });

  describe('removing and leaving', () => {
    it('a removed member’s dashboard token and refresh cookie stop working at once; their locks end and their conversations are unassigned', async () => {
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const locked = (await inbound(server, connection, { text: 'locked' })).conversation_id;
      const assigned = (await inbound(server, connection, { text: 'assigned' })).conversation_id;
      assert.equal((await server.request('POST', `/v1/conversations/${locked}/lock`, { token: agent.token, body: {} })).status, 201);
      const assign = await server.request('POST', `/v1/conversations/${assigned}/assign`, { token: owner.token, body: { member_id: agent.memberId } });
      assert.equal(assign.status, 200, assign.text);

      const removed = await remove(owner.token, agent.memberId);
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(removed.body, { id: agent.memberId, object: 'member', deleted: true });

      assertError(await server.request('GET', '/v1/identity', { token: agent.token }), 401, 'credential_invalid');
      assert.equal((await server.request('POST', '/auth/refresh', { headers: { cookie: agent.refreshCookie } })).status, 401);
      assertError(await server.request('GET', `/v1/members/${agent.memberId}`, { token: owner.token }), 404, 'resource_not_found');

      assertError(await server.request('GET', `/v1/conversations/${locked}/lock`, { token: owner.token }), 404, 'resource_not_found');
      const [lease] = await server.app.store.db.selectFrom('conversation_locks').select(['status', 'ended_at']).where('conversation_id', '=', locked).execute();
      assert.equal(lease?.status, 'released', 'ended in the removal, not left to its deadline');
      assert.equal((await server.request('GET', `/v1/conversations/${assigned}`, { token: owner.token })).body.assignee_id, null);
      const events = await server.app.store.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where('organization_id', '=', owner.organizationId)
        .orderBy('id')
        .execute();
      const unassigned = events.filter((event) => event.type === 'conversation.updated' && JSON.parse(event.data).id === assigned);
      assert.equal(JSON.parse(unassigned.at(-1)!.data).assignee_id, null);
      const released = events.filter((event) => event.type === 'conversation.lock_changed' && JSON.parse(event.data).conversation_id === locked);
      assert.equal(JSON.parse(released.at(-1)!.data).last_change, 'released');

      const entry = (await auditActions(owner.organizationId)).find((row) => row.action === 'member.removed');
      assert.deepEqual(entry?.data, { email: agent.email, role: 'agent' });
    });

    it('anyone but the owner may leave; the owner must transfer first', async () => {
      const owner = await signUp(server);
      for (const role of ['admin', 'agent', 'viewer'] as const) {
        const member = await addMember(server, owner.organizationId, role);
        assert.equal((await remove(member.token, member.memberId)).status, 200, role);
        assertError(await server.request('GET', '/v1/identity', { token: member.token }), 401, 'credential_invalid');
      }
      assertError(await remove(owner.token, owner.memberId), 409, 'owner_immutable');
      assert.deepEqual(
        (await auditActions(owner.organizationId)).filter((row) => row.action === 'member.left').map((row) => row.data.role),
        ['admin', 'agent', 'viewer'],
      );
    });

    it('members remove only those they outrank; never the owner; never another organization’s', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const otherAdmin = await addMember(server, owner.organizationId, 'admin');
      const agent = await addMember(server, owner.organizationId, 'agent');
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assertError(await remove(viewer.token, agent.memberId), 403, 'role_insufficient');
      assertError(await remove(agent.token, viewer.memberId), 403, 'role_insufficient');
      assertError(await remove(admin.token, otherAdmin.memberId), 403, 'role_insufficient');
      assertError(await remove(admin.token, owner.memberId), 409, 'owner_immutable');
      assert.equal((await remove(admin.token, viewer.memberId)).status, 200);
      assertError(await remove(beta.token, agent.memberId), 404, 'resource_not_found');
      assertError(await remove(owner.token, viewer.memberId), 404, 'resource_not_found');
    });
  });

  describe('transferring ownership', () => {
    it('moves ownership in one step: the owner becomes an admin, both are mailed, it is audited', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const moved = await transfer(owner.token, { member_id: admin.memberId });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body.role, 'owner');
      const members = await server.request('GET', '/v1/members', { token: admin.token });
      const roles = Object.fromEntries(members.body.data.map((member: { id: string; role: string }) => [member.id, member.role]));
      assert.deepEqual(roles, { [owner.memberId]: 'admin', [admin.memberId]: 'owner' });
      // The previous owner's very next request is an admin's.
      assertError(await transfer(owner.token, { member_id: owner.memberId }), 403, 'role_insufficient');
      const mails = await server.app.store.db
        .selectFrom('mails')
        .select(['to_address', 'subject'])
        .where('organization_id', '=', owner.organizationId)
        .execute();
      assert.deepEqual(mails.map((mail) => mail.to_address).sort(), [owner.email, admin.email].sort());
      const entry = (await auditActions(owner.organizationId)).find((row) => row.action === 'organization.ownership_transferred');
      assert.deepEqual(entry?.data, { from_member_id: owner.memberId, to_member_id: admin.memberId, previous_role: 'admin' });
    });

    it('needs a sign-in within 10 minutes, or the password', async () => {
      const owner = await signUp(server);
      const agent = await addMember(server, owner.organizationId, 'agent');
      server.clock.advance(11 * MINUTE);
      const stale = assertError(await transfer(owner.token, { member_id: agent.memberId }), 400, 'validation_failed');
      assert.equal(stale.param, '/password');
      const wrong = assertError(await transfer(owner.token, { member_id: agent.memberId, password: 'not the password' }), 400, 'validation_failed');
      assert.equal(wrong.param, '/password');
      const moved = await transfer(owner.token, { member_id: agent.memberId, password: owner.password });
      assert.equal(moved.status, 200, moved.text);
    });

    it('refuses the owner themselves, a member of another organization, and anyone but the owner', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const self = assertError(await transfer(owner.token, { member_id: owner.memberId }), 409, 'invalid_state');
      assert.equal(self.param, '/member_id');
      const stranger = assertError(await transfer(owner.token, { member_id: beta.memberId }), 404, 'resource_not_found');
      assert.equal(stranger.param, '/member_id');
      assertError(await transfer(admin.token, { member_id: admin.memberId }), 403, 'role_insufficient');
      assertError(await transfer(owner.token, {}), 400, 'validation_failed');
    });

    it('two transfers at once: exactly one lands, and the organization has one owner', async () => {
      const owner = await signUp(server);
      const first = await addMember(server, owner.organizationId, 'admin');
      const second = await addMember(server, owner.organizationId, 'agent');
      const answers = await Promise.all([transfer(owner.token, { member_id: first.memberId }), transfer(owner.token, { member_id: second.memberId })]);
      assert.equal(answers.filter((answer) => answer.status === 200).length, 1, answers.map((answer) => answer.text).join('\n'));
      // The loser was either refused at the door (no longer the owner) or found the transfer landed meanwhile.
      const loser = answers.find((answer) => answer.status !== 200)!;
      assert.ok(['role_insufficient', 'invalid_state'].includes(loser.body.error.code), loser.text);
      const owners = await server.app.store.db
        .selectFrom('members')
        .select('id')
        .where('organization_id', '=', owner.organizationId)
        .where('role', '=', 'owner')
        .execute();
      assert.equal(owners.length, 1);
    });

    it('the store itself refuses a second owner', async () => {
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      await assert.rejects(server.app.store.db.updateTable('members').set({ role: 'owner' }).where('id', '=', admin.memberId).execute(), (error: unknown) =>
        server.app.store.dialect.isUniqueViolation(error),
      );
    });
  });
});
