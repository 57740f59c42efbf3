import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { SECOND } from '../../lib/clock.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { addMember, assertError, createConnection, createKey, inbound, settle, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

const LOCK_EVENTS = ['conversation.lock_changed', 'conversation.lock_requested'];

interface Member {
  token: string;
  memberId: string;
}

describe('conversation locks', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: { id: string; phone_number_id: string };
  let key: string;
  let receiver: Receiver;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    receiver = await startReceiver(suite);
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: key, body: { url: receiver.url, events: LOCK_EVENTS } });
    assert.equal(endpoint.status, 201, endpoint.text);
  });

  /** A conversation made the way customers make them: a message to the sandbox number. */
  async function conversation(): Promise<string> {
    return (await inbound(server, line, { text: 'hello' })).conversation_id;
  }

  const agent = (): Promise<Member> => addMember(server, owner.organizationId, 'agent');
  const acquire = (member: Member, conversationId: string, body?: Record<string, unknown>) =>
    server.request('POST', `/v1/conversations/${conversationId}/lock`, { token: member.token, body });
  const release = (member: Member, conversationId: string) => server.request('DELETE', `/v1/conversations/${conversationId}/lock`, { token: member.token });
  const transfer = (member: Member, conversationId: string, memberId: string) =>
    server.request('POST', `/v1/conversations/${conversationId}/lock/transfer`, { token: member.token, body: { member_id: memberId } });
  const requestHandover = (member: Member, conversationId: string, body?: Record<string, unknown>) =>
    server.request('POST', `/v1/conversations/${conversationId}/lock/request`, { token: member.token, body });

  /** The lock events about one conversation, as stored, oldest first. */
  async function lockEvents(conversationId: string) {
    const rows = await server.app.store.db.selectFrom('events').selectAll().where('type', 'in', LOCK_EVENTS).orderBy('id').execute();
    return rows
      .map((row) => ({ type: row.type, connection_id: row.connection_id, created_at: row.created_at, object: JSON.parse(row.data) as Record<string, any> }))
      .filter((event) => event.object.conversation_id === conversationId);
  }
  const changes = async (conversationId: string) =>
    (await lockEvents(conversationId)).map(
      (event) => `${event.type === 'conversation.lock_requested' ? 'requested' : event.object.last_change}:${event.object.holder.member_id}`,
    );
  const iso = (ms: number) => new Date(ms).toISOString();
  const lastChanges = async (conversationId: string) => (await lockEvents(conversationId)).map((event) => event.object.last_change as string);
  const readLock = (conversationId: string) => server.request('GET', `/v1/conversations/${conversationId}/lock`, { token: key });
  /** Moves the clock to `start + offset` and runs every job due. */
  async function runTo(start: number, offset: number): Promise<void> {
    server.clock.set(start + offset);
    await settle(server);
  }

  describe('acquire, renew, release', () => {
    it('acquiring a free conversation answers 201 with a lease of the default 300 s, announced as acquired', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const now = server.clock.now().getTime();
      const response = await acquire(alice, conversationId);
      assert.equal(response.status, 201, response.text);
      const lock = response.body;
      assert.match(lock.id, /^lck_/);
      assert.equal(lock.object, 'lock');
      assert.equal(lock.conversation_id, conversationId);
      assert.equal(lock.connection_id, line.id);
      assert.equal(lock.status, 'held');
      assert.equal(lock.last_change, 'acquired');
      assert.deepEqual(lock.holder, { member_id: alice.memberId });
      assert.equal(lock.previous_holder, null);
      assert.equal(lock.ttl_seconds, 300);
      assert.equal(lock.idle_seconds, 300);
      assert.equal(lock.acquired_at, iso(now));
      assert.equal(lock.renewed_at, iso(now));
      assert.equal(lock.expires_at, iso(now + 300 * SECOND));
      assert.equal(lock.idle_expires_at, iso(now + 300 * SECOND));
      assert.equal(lock.ended_at, null);
      assert.equal(lock.handover_request, null);

      const read = await readLock(conversationId);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body, lock, 'an API key may read the lock');

      const [event, ...more] = await lockEvents(conversationId);
      assert.equal(more.length, 0);
      assert.equal(event!.type, 'conversation.lock_changed');
      assert.equal(event!.connection_id, line.id);
      assert.deepEqual(event!.object, lock);
    });

    it('the webhook receiver gets conversation.lock_changed with the lock and its last_change', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const lock = (await acquire(alice, conversationId)).body;
      await settle(server);
      const delivered = receiver.received
        .map((request) => JSON.parse(request.body) as { type: string; connection_id: string; data: { object: Record<string, any> } })
        .filter((event) => event.data.object.id === lock.id);
      assert.equal(delivered.length, 1);
      assert.equal(delivered[0]!.type, 'conversation.lock_changed');
      assert.equal(delivered[0]!.connection_id, line.id);
      assert.equal(delivered[0]!.data.object.last_change, 'acquired');
      assert.deepEqual(delivered[0]!.data.object.holder, { member_id: alice.memberId });
    });

    it('the holder acquiring again renews: 200, the same lock, both deadlines moved, nothing announced, the timer moved', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const first = (await acquire(alice, conversationId, { ttl_seconds: 60, idle_seconds: 20 })).body;
      server.clock.advance(10 * SECOND);
      const now = server.clock.now().getTime();
      const renewed = await acquire(alice, conversationId);
      assert.equal(renewed.status, 200, renewed.text);
      assert.equal(renewed.body.id, first.id);
      assert.equal(renewed.body.last_change, 'renewed');
      assert.equal(renewed.body.acquired_at, first.acquired_at);
      assert.equal(renewed.body.renewed_at, iso(now));
      assert.equal(renewed.body.ttl_seconds, 60, 'a renewal keeps the lock’s periods unless given');
      assert.equal(renewed.body.idle_seconds, 20);
      assert.equal(renewed.body.expires_at, iso(now + 60 * SECOND));
      assert.equal(renewed.body.idle_expires_at, iso(now + 20 * SECOND));
      assert.deepEqual(await changes(conversationId), [`acquired:${alice.memberId}`]);
      const timers = await server.app.store.db
        .selectFrom('jobs')
        .select('run_at')
        .where('name', '=', 'conversation_lock.expire')
        .where('status', '=', 'queued')
        .where('dedupe_key', 'like', `%${first.id}%`)
        .execute();
      assert.deepEqual(
        timers.map((job) => job.run_at),
        [iso(now + 20 * SECOND)],
      );
    });

    it('a renewal may change the periods; an idle period left out follows a shorter TTL down', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId, { ttl_seconds: 600, idle_seconds: 120 });
      const shorter = await acquire(alice, conversationId, { ttl_seconds: 30 });
      assert.equal(shorter.status, 200, shorter.text);
      assert.equal(shorter.body.ttl_seconds, 30);
      assert.equal(shorter.body.idle_seconds, 30);
      const both = await acquire(alice, conversationId, { ttl_seconds: 3600, idle_seconds: 45 });
      assert.equal(both.body.ttl_seconds, 3600);
      assert.equal(both.body.idle_seconds, 45);
    });

    it('accepts a request with no body at all', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      assert.equal((await acquire(alice, conversationId)).status, 201);
      assert.equal((await requestHandover(await agent(), conversationId)).status, 200);
    });

    it('the holder releases: 200 with the ended lock, announced as released; the conversation is free again', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const lock = (await acquire(alice, conversationId)).body;
      const released = await release(alice, conversationId);
      assert.equal(released.status, 200, released.text);
      assert.equal(released.body.id, lock.id);
      assert.equal(released.body.status, 'released');
      assert.equal(released.body.last_change, 'released');
      assert.equal(released.body.ended_at, server.clock.now().toISOString());
      assertError(await readLock(conversationId), 404, 'resource_not_found');
      assertError(await release(alice, conversationId), 409, 'invalid_state');
      const next = await acquire(bob, conversationId);
      assert.equal(next.status, 201, next.text);
      assert.notEqual(next.body.id, lock.id, 'a new lease is a new lock');
      assert.deepEqual(await changes(conversationId), [`acquired:${alice.memberId}`, `released:${alice.memberId}`, `acquired:${bob.memberId}`]);
      const queued = await server.app.store.db
        .selectFrom('jobs')
        .select('id')
        .where('dedupe_key', 'like', `%${lock.id}%`)
        .where('status', '=', 'queued')
        .execute();
      assert.equal(queued.length, 0, 'the released lease’s timer is cancelled');
    });
  });

  describe('transfer and handover requests', () => {
    it('the holder hands the lock to another member: a fresh lease for them, announced as transferred', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 120, idle_seconds: 60 })).body;
      server.clock.advance(30 * SECOND);
      const now = server.clock.now().getTime();
      const moved = await transfer(alice, conversationId, bob.memberId);
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body.id, lock.id);
      assert.equal(moved.body.status, 'held');
      assert.equal(moved.body.last_change, 'transferred');
      assert.deepEqual(moved.body.holder, { member_id: bob.memberId });
      assert.deepEqual(moved.body.previous_holder, { member_id: alice.memberId });
      assert.equal(moved.body.acquired_at, iso(now));
      assert.equal(moved.body.idle_expires_at, iso(now + 60 * SECOND));
      assert.equal(moved.body.expires_at, iso(now + 120 * SECOND));
      assert.deepEqual(await changes(conversationId), [`acquired:${alice.memberId}`, `transferred:${bob.memberId}`]);

      const refused = assertError(await acquire(alice, conversationId), 409, 'conversation_locked');
      assert.deepEqual(refused.lock.holder, { member_id: bob.memberId });
      assert.equal((await acquire(bob, conversationId)).status, 200, 'the new holder renews it');
    });

    it('a member asks the holder for it: conversation.lock_requested with the request on the lock; a transfer settles it', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      const asked = await requestHandover(bob, conversationId, { message: 'The customer is mine from yesterday.' });
      assert.equal(asked.status, 200, asked.text);
      assert.deepEqual(asked.body.holder, { member_id: alice.memberId });
      assert.deepEqual(asked.body.handover_request, {
        member_id: bob.memberId,
        message: 'The customer is mine from yesterday.',
        requested_at: server.clock.now().toISOString(),
      });
      const events = await lockEvents(conversationId);
      assert.equal(events.at(-1)!.type, 'conversation.lock_requested');
      assert.deepEqual(events.at(-1)!.object, asked.body);

      const moved = await transfer(alice, conversationId, bob.memberId);
      assert.equal(moved.body.handover_request, null);
      assert.deepEqual(await changes(conversationId), [`acquired:${alice.memberId}`, `requested:${alice.memberId}`, `transferred:${bob.memberId}`]);
    });

    it('asking for a conversation nobody holds, or for one you hold, is invalid_state', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      assertError(await requestHandover(alice, conversationId), 409, 'invalid_state');
      await acquire(alice, conversationId);
      assertError(await requestHandover(alice, conversationId), 409, 'invalid_state');
    });
  });

  describe('refusals', () => {
    it('a TTL of 0 or of a week is validation_failed on /ttl_seconds', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      for (const ttl of [0, 7 * 24 * 3600, 3601, -5]) {
        const error = assertError(await acquire(alice, conversationId, { ttl_seconds: ttl }), 400, 'validation_failed');
        assert.equal(error.param, '/ttl_seconds', `ttl ${ttl}`);
      }
      assertError(await acquire(alice, conversationId, { ttl_seconds: 1.5 }), 400, 'validation_failed');
      assertError(await acquire(alice, conversationId, { ttl_seconds: '60' }), 400, 'validation_failed');
      assert.equal(assertError(await acquire(alice, conversationId, { idle_seconds: 0 }), 400, 'validation_failed').param, '/idle_seconds');
      assert.equal(assertError(await acquire(alice, conversationId, { colour: 'blue' }), 400, 'validation_failed').param, '/colour');
      assert.equal((await lockEvents(conversationId)).length, 0, 'nothing was acquired');
      assert.equal((await acquire(alice, conversationId, { ttl_seconds: 3600 })).status, 201, 'an hour is the longest lease');
    });

    it('an idle period longer than the TTL is validation_failed on /idle_seconds', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      assert.equal(assertError(await acquire(alice, conversationId, { ttl_seconds: 60, idle_seconds: 61 }), 400, 'validation_failed').param, '/idle_seconds');
      assert.equal(
        assertError(await acquire(alice, conversationId, { idle_seconds: 301 }), 400, 'validation_failed').param,
        '/idle_seconds',
        'against the default TTL',
      );
      await acquire(alice, conversationId, { ttl_seconds: 60 });
      assert.equal(
        assertError(await acquire(alice, conversationId, { idle_seconds: 90 }), 400, 'validation_failed').param,
        '/idle_seconds',
        'against the lock’s own TTL',
      );
    });

    it('acquiring a conversation another member holds is conversation_locked, naming the holder and the expiry', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 90, idle_seconds: 30 })).body;
      const error = assertError(await acquire(bob, conversationId), 409, 'conversation_locked');
      assert.equal(error.retryable, true);
      assert.equal(error.lock.id, lock.id);
      assert.deepEqual(error.lock.holder, { member_id: alice.memberId });
      assert.equal(error.lock.expires_at, lock.expires_at);
      assert.equal(error.lock.idle_expires_at, lock.idle_expires_at);
      assert.ok(error.message.includes(alice.memberId) && error.message.includes(lock.idle_expires_at), error.message);
    });

    it('a release by a non-holder is conversation_locked, and the lock stays', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      const error = assertError(await release(bob, conversationId), 409, 'conversation_locked');
      assert.deepEqual(error.lock.holder, { member_id: alice.memberId });
      assert.equal((await readLock(conversationId)).body.status, 'held');
      assertError(await release(await agent(), await conversation()), 409, 'invalid_state');
    });

    it('a transfer to oneself is validation_failed on /member_id', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      assert.equal(assertError(await transfer(alice, conversationId, alice.memberId), 400, 'validation_failed').param, '/member_id');
    });

    it('a transfer to another organization’s member, a removed member or an unknown one is 404 on /member_id', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      const stranger = await signUp(server, { organizationName: 'Elsewhere Ltd' });
      assert.equal(assertError(await transfer(alice, conversationId, stranger.memberId), 404, 'resource_not_found').param, '/member_id');

      const leaver = await agent();
      await server.app.store.db.deleteFrom('members').where('id', '=', leaver.memberId).execute();
      assert.equal(assertError(await transfer(alice, conversationId, leaver.memberId), 404, 'resource_not_found').param, '/member_id');
      assert.equal(assertError(await transfer(alice, conversationId, 'mem_01JZ8Q6W3M4T2V9X0B7C5D1E2F'), 404, 'resource_not_found').param, '/member_id');
      assert.equal(assertError(await transfer(alice, conversationId, 'bob'), 400, 'validation_failed').param, '/member_id');

      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal(
        assertError(await transfer(alice, conversationId, viewer.memberId), 400, 'validation_failed').param,
        '/member_id',
        'a viewer cannot send, so cannot hold',
      );
      assert.deepEqual(await changes(conversationId), [`acquired:${alice.memberId}`], 'nothing moved');
    });

    it('a transfer or a release of a lock one does not hold is conversation_locked; of a free conversation invalid_state', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      assertError(await transfer(alice, conversationId, bob.memberId), 409, 'invalid_state');
      await acquire(alice, conversationId);
      assertError(await transfer(bob, conversationId, (await agent()).memberId), 409, 'conversation_locked');
    });

    it('another organization’s conversation is 404 on every lock endpoint', async () => {
      const conversationId = await conversation();
      const stranger = await signUp(server, { organizationName: 'Elsewhere Ltd' });
      const outsider = { token: stranger.token, memberId: stranger.memberId };
      assertError(await acquire(outsider, conversationId), 404, 'resource_not_found');
      assertError(await release(outsider, conversationId), 404, 'resource_not_found');
      assertError(await transfer(outsider, conversationId, (await agent()).memberId), 404, 'resource_not_found');
      assertError(await requestHandover(outsider, conversationId), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/conversations/${conversationId}/lock`, { token: stranger.token }), 404, 'resource_not_found');
      assertError(await acquire(outsider, 'cnv_01JZ8Q6W3M4T2V9X0B7C5D1E2F'), 404, 'resource_not_found');
      assert.equal(assertError(await acquire(outsider, 'not-an-id'), 400, 'validation_failed').param, '/path/id');
    });

    it('API keys cannot hold locks (credential_kind_not_allowed) and a viewer lacks messages:write', async () => {
      const conversationId = await conversation();
      const byKey = await server.request('POST', `/v1/conversations/${conversationId}/lock`, { token: key, body: {} });
      assert.deepEqual(assertError(byKey, 403, 'credential_kind_not_allowed').allowed_credentials, ['dashboard_token']);
      assertError(await server.request('DELETE', `/v1/conversations/${conversationId}/lock`, { token: key }), 403, 'credential_kind_not_allowed');
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assertError(await acquire(viewer, conversationId), 403, 'scope_missing');
      assertError(await server.request('GET', `/v1/conversations/${conversationId}/lock`, { token: viewer.token }), 404, 'resource_not_found');
    });

    it('a holder removed from the organization no longer binds the conversation: the next member gets it, and the old lease is announced as released', async () => {
      const leaver = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const lock = (await acquire(leaver, conversationId)).body;
      await server.app.store.db.deleteFrom('members').where('id', '=', leaver.memberId).execute();
      assertError(await readLock(conversationId), 404, 'resource_not_found');
      const taken = await acquire(bob, conversationId);
      assert.equal(taken.status, 201, taken.text);
      const events = await lockEvents(conversationId);
      assert.deepEqual(
        events.map((event) => [event.object.id, event.object.last_change]),
        [
          [lock.id, 'acquired'],
          [lock.id, 'released'],
          [taken.body.id, 'acquired'],
        ],
      );
    });
  });

  describe('two members at once', () => {
    it('two members acquiring one conversation at once: exactly one wins, the other is told who', async () => {
      const alice = await agent();
      const bob = await agent();
      for (let round = 0; round < 8; round++) {
        const conversationId = await conversation();
        const answers = await Promise.all([acquire(alice, conversationId), acquire(bob, conversationId)]);
        const statuses = answers.map((answer) => answer.status).sort();
        assert.deepEqual(statuses, [201, 409], answers.map((answer) => answer.text).join('\n'));
        const winner = answers.find((answer) => answer.status === 201)!.body;
        const loser = answers.find((answer) => answer.status === 409)!;
        assert.deepEqual(assertError(loser, 409, 'conversation_locked').lock.holder, winner.holder);
        const held = await server.app.store.db.selectFrom('conversation_locks').select('id').where('conversation_id', '=', conversationId).execute();
        assert.equal(held.length, 1);
        assert.deepEqual(await changes(conversationId), [`acquired:${winner.holder.member_id}`]);
      }
    });

    it('five members racing for one conversation: one lease, four refusals', async () => {
      const members = await Promise.all([agent(), agent(), agent(), agent(), agent()]);
      const conversationId = await conversation();
      const answers = await Promise.all(members.map((member) => acquire(member, conversationId)));
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409, 409, 409, 409], answers.map((answer) => answer.text).join('\n'));
    });

    it('a lease released while another member waits is taken by that member, not lost', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      const [released, taken] = await Promise.all([release(alice, conversationId), acquire(bob, conversationId)]);
      assert.equal(released.status, 200, released.text);
      // Bob either came first (refused) or after (got it); never a second held lease.
      assert.ok([201, 409].includes(taken.status), taken.text);
      const held = await server.app.store.db
        .selectFrom('conversation_locks')
        .select('id')
        .where('conversation_id', '=', conversationId)
        .where('status', '=', 'held')
        .execute();
      assert.equal(held.length, taken.status === 201 ? 1 : 0);
    });
  });

  describe('timers: expiry at the TTL, idling, and reads that do not wait for them', () => {
    it('a lease nobody renews expires at its TTL: lock_changed expired, ended at the deadline, and the conversation is free', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 60 })).body;
      await runTo(start, 60 * SECOND - 1);
      assert.deepEqual(await lastChanges(conversationId), ['acquired']);
      assert.equal((await readLock(conversationId)).status, 200);
      await runTo(start, 60 * SECOND);
      const [, expired, ...more] = await lockEvents(conversationId);
      assert.equal(more.length, 0);
      assert.equal(expired!.object.id, lock.id);
      assert.equal(expired!.object.status, 'expired');
      assert.equal(expired!.object.last_change, 'expired');
      assert.deepEqual(expired!.object.holder, { member_id: alice.memberId });
      assert.equal(expired!.object.ended_at, iso(start + 60 * SECOND));
      assert.equal(expired!.created_at, iso(start + 60 * SECOND));
      assertError(await readLock(conversationId), 404, 'resource_not_found');
      assert.equal((await acquire(bob, conversationId)).status, 201);
    });

    it('a holder who stops renewing within idle_seconds loses the lock as idle, before the TTL', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      await acquire(alice, conversationId, { ttl_seconds: 300, idle_seconds: 30 });
      await runTo(start, 29 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired']);
      await runTo(start, 30 * SECOND);
      const events = await lockEvents(conversationId);
      assert.deepEqual(
        events.map((event) => event.object.last_change),
        ['acquired', 'idle'],
      );
      assert.equal(events[1]!.object.status, 'idle');
      assert.equal(events[1]!.object.ended_at, iso(start + 30 * SECOND));
      assert.equal(events[1]!.object.expires_at, iso(start + 300 * SECOND), 'the TTL was still ahead');
      await runTo(start, 300 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'idle'], 'ended once');
    });

    it('renewing in time keeps it: the earlier deadline passes silently and the new one ends it', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      await acquire(alice, conversationId, { ttl_seconds: 120, idle_seconds: 30 });
      await runTo(start, 20 * SECOND);
      assert.equal((await acquire(alice, conversationId)).status, 200);
      await runTo(start, 30 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired']);
      assert.equal((await readLock(conversationId)).body.idle_expires_at, iso(start + 50 * SECOND));
      await runTo(start, 50 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'idle']);
    });

    it('a lease renewed all along still expires at its TTL once renewals stop, as expired when idle_seconds equals it', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      await acquire(alice, conversationId, { ttl_seconds: 40 });
      for (const at of [30, 60, 90]) {
        await runTo(start, at * SECOND);
        assert.equal((await acquire(alice, conversationId)).status, 200, `renewed at ${at} s`);
      }
      await runTo(start, 129 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired']);
      await runTo(start, 130 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'expired']);
    });

    it('a transfer restarts the lease for the new holder, and moves the timer with it', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      await acquire(alice, conversationId, { ttl_seconds: 60, idle_seconds: 60 });
      await runTo(start, 40 * SECOND);
      const moved = await server.request('POST', `/v1/conversations/${conversationId}/lock/transfer`, {
        token: alice.token,
        body: { member_id: bob.memberId },
      });
      assert.equal(moved.status, 200, moved.text);
      await runTo(start, 60 * SECOND);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'transferred']);
      await runTo(start, 100 * SECOND);
      const events = await lockEvents(conversationId);
      assert.deepEqual(
        events.map((event) => event.object.last_change),
        ['acquired', 'transferred', 'expired'],
      );
      assert.deepEqual(events[2]!.object.holder, { member_id: bob.memberId });
    });

    it('reads treat a lease past its deadline as free before its timer runs; the next acquisition announces the old one ended, once', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 60, idle_seconds: 10 })).body;
      // No worker runs: the timer stays queued.
      server.clock.set(start + 10 * SECOND);
      assertError(await readLock(conversationId), 404, 'resource_not_found');
      await server.app.services.locks.assertMaySend(server.app.store.db, conversationId, await server.app.services.credentials.authenticate(bob.token));
      const taken = await acquire(bob, conversationId);
      assert.equal(taken.status, 201, taken.text);
      const events = await lockEvents(conversationId);
      assert.deepEqual(
        events.map((event) => [event.object.id, event.object.last_change]),
        [
          [lock.id, 'acquired'],
          [lock.id, 'idle'],
          [taken.body.id, 'acquired'],
        ],
      );
      assert.equal(events[1]!.object.ended_at, iso(start + 10 * SECOND), 'ended at its deadline, not when noticed');
      await settle(server);
      assert.equal((await lockEvents(conversationId)).length, 3, 'the old timer finds nothing left to do');
    });

    it('a holder coming back after the deadline gets a new lease (201), the lapsed one announced as ended', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const start = server.clock.now().getTime();
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 20 })).body;
      server.clock.set(start + 25 * SECOND);
      const again = await acquire(alice, conversationId);
      assert.equal(again.status, 201, again.text);
      assert.notEqual(again.body.id, lock.id);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'expired', 'acquired']);
    });

    it('a stale timer does nothing: one whose lease was renewed after it was claimed, one run twice, one of no lock', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      const { locks } = server.app.services;
      const lock = (await acquire(alice, conversationId, { ttl_seconds: 60, idle_seconds: 30 })).body;
      server.clock.advance(5 * SECOND);
      await acquire(alice, conversationId);
      // As a worker that claimed the old timer before the renewal could cancel it would run it.
      await locks.expire(lock.id, lock.idle_expires_at);
      assert.deepEqual(await lastChanges(conversationId), ['acquired']);
      const renewed = (await readLock(conversationId)).body;
      server.clock.set(renewed.idle_expires_at);
      await locks.expire(lock.id, renewed.idle_expires_at);
      await locks.expire(lock.id, renewed.idle_expires_at);
      assert.deepEqual(await lastChanges(conversationId), ['acquired', 'idle'], 'announced once');
      await locks.expire('lck_01JZ8Q6W3M4T2V9X0B7C5D1E2F', renewed.idle_expires_at);
    });
  });

  describe('with contact merges', () => {
    it('a merge that folds away a locked conversation is not blocked by its lock, which ends with it, announced', async () => {
      const alice = await agent();
      const [survivor, source] = [await conversation(), await conversation()];
      const contactOf = async (conversationId: string) =>
        (await server.app.store.db.selectFrom('conversations').select('contact_id').where('id', '=', conversationId).executeTakeFirstOrThrow()).contact_id;
      const lock = (await acquire(alice, source)).body;
      const merged = await server.request('POST', `/v1/contacts/${await contactOf(survivor)}/merge`, {
        token: key,
        body: { source_contact_id: await contactOf(source) },
      });
      assert.equal(merged.status, 200, merged.text);
      assert.deepEqual(await lastChanges(source), ['acquired', 'released']);
      const rows = await server.app.store.db.selectFrom('conversation_locks').select('id').where('id', '=', lock.id).execute();
      assert.equal(rows.length, 0);
      assert.equal((await acquire(alice, survivor)).status, 201, 'the surviving conversation is free');
      await server.app.services.locks.expire(lock.id, lock.idle_expires_at);
    });
  });

  describe('assertMaySend, for the send pipeline', () => {
    const principalOf = (token: string) => server.app.services.credentials.authenticate(token);

    it('lets the holder send, refuses another member and an API key with conversation_locked naming the lock', async () => {
      const alice = await agent();
      const bob = await agent();
      const conversationId = await conversation();
      const { db } = server.app.store;
      const { locks } = server.app.services;
      await locks.assertMaySend(db, conversationId, await principalOf(bob.token));
      const lock = (await acquire(alice, conversationId)).body;
      await locks.assertMaySend(db, conversationId, await principalOf(alice.token));
      for (const token of [bob.token, key, (await addMember(server, owner.organizationId, 'admin')).token]) {
        await assert.rejects(locks.assertMaySend(db, conversationId, await principalOf(token)), (error: any) => {
          assert.equal(error.code, 'conversation_locked');
          assert.equal(error.status, 409);
          assert.deepEqual(error.extra.lock.holder, { member_id: alice.memberId });
          assert.equal(error.extra.lock.expires_at, lock.expires_at);
          return true;
        });
      }
      await release(alice, conversationId);
      await locks.assertMaySend(db, conversationId, await principalOf(key));
    });

    it('answers inside a transaction too (the send pipeline’s own)', async () => {
      const alice = await agent();
      const conversationId = await conversation();
      await acquire(alice, conversationId);
      const principal = await principalOf(key);
      await assert.rejects(
        server.app.store.db.transaction().execute((trx) => server.app.services.locks.assertMaySend(trx, conversationId, principal)),
        (error: any) => error.code === 'conversation_locked',
      );
    });
  });
});
