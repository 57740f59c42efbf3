import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  inbound as inboundRow,
  newCustomer,
  signUp,
  type SignedUp,
  startServerWithOwner,
} from '../../../test/factories.ts';

interface Connection {
  id: string;
  phone_number_id: string;
}
type Message = Record<string, any> & { id: string; conversation_id: string; contact_id: string; connection_id: string };

describe('messages', () => {
  let server: TestServer;
  let owner: SignedUp;
  let live: Connection;
  let other: Connection;
  let test: Connection;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    live = await createConnection(server, owner);
    other = await createConnection(server, owner, { name: 'Sales line' });
    test = await createConnection(server, owner, { test: true, name: 'Test line' });
  });

  /** A customer's message arrives through the sandbox and the provider's webhook; answers it as the API shows it. */
  async function inbound(connection: Connection, body: Record<string, unknown>): Promise<Message> {
    const row = await inboundRow(server, connection, body);
    const got = await server.request('GET', `/v1/messages/${row.id}`, { token: owner.token });
    assert.equal(got.status, 200, got.text);
    return got.body as Message;
  }
  const list = async (query: string, token = owner.token) => {
    const response = await server.request('GET', `/v1/messages${query}`, { token });
    assert.equal(response.status, 200, response.text);
    return response.body as { object: 'list'; data: Message[]; has_more: boolean; next_cursor: string | null };
  };
  const ids = (page: { data: Message[] }) => page.data.map((message) => message.id);

  describe('get', () => {
    it('answers the message with its content under its type', async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'text', text: 'Hello there', name: 'Ada' });
      assert.match(message.id, /^msg_/);
      assert.equal(message.object, 'message');
      assert.equal(message.type, 'text');
      assert.equal(message.direction, 'inbound');
      assert.equal(message.status, 'received');
      assert.equal(message.connection_id, live.id);
      assert.equal(message.text.body, 'Hello there', 'the content survives response serialization under the type key');
      assert.equal(message.imported, false);
      assert.deepEqual(message.metadata, {});
      for (const key of ['image', 'location', 'interactive']) assert.equal(key in message, false, `${key} is absent`);
    });

    it('keeps the content of other types (location)', async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'location', location: { latitude: 51.5, longitude: -0.12, name: 'Office' } });
      assert.equal(message.type, 'location');
      assert.equal(message.location.latitude, 51.5);
      assert.equal(message.location.name, 'Office');
    });

    it('an unknown id is resource_not_found; a malformed one is validation_failed', async () => {
      assertError(await server.request('GET', '/v1/messages/msg_00000000000000000000000000', { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('GET', '/v1/messages/not-an-id', { token: owner.token }), 400, 'validation_failed');
    });
  });

  describe('list', () => {
    it('lists a conversation page by page (limit 1 and after)', async () => {
      const from = newCustomer();
      const first = await inbound(live, { from, type: 'text', text: 'one' });
      const second = await inbound(live, { from, type: 'text', text: 'two' });
      const third = await inbound(live, { from, type: 'text', text: 'three' });
      assert.equal(second.conversation_id, first.conversation_id);
      assert.equal(third.conversation_id, first.conversation_id);
      await inbound(live, { from: newCustomer(), type: 'text', text: 'someone else' });

      const all = await list(`?conversation_id=${first.conversation_id}`);
      assert.deepEqual(ids(all), [third.id, second.id, first.id], 'newest first by default');
      assert.deepEqual(all.data[0], third, 'list items are the messages as get answers them');
      assert.equal(all.data[2]!.text.body, 'one');

      const page1 = await list(`?conversation_id=${first.conversation_id}&limit=1`);
      assert.deepEqual(ids(page1), [third.id]);
      assert.equal(page1.has_more, true);
      assert.equal(page1.next_cursor, third.id);
      const page2 = await list(`?conversation_id=${first.conversation_id}&limit=1&after=${page1.next_cursor}`);
      assert.deepEqual(ids(page2), [second.id]);
      const page3 = await list(`?conversation_id=${first.conversation_id}&limit=1&after=${page2.next_cursor}`);
      assert.deepEqual(ids(page3), [first.id]);
      assert.equal(page3.has_more, false);
      assert.equal(page3.next_cursor, null);

      const ascending = await list(`?conversation_id=${first.conversation_id}&order=asc`);
      assert.deepEqual(ids(ascending), [first.id, second.id, third.id]);
    });

    it('filters by contact, connection, direction and status', async () => {
      const from = newCustomer();
      const onLive = await inbound(live, { from, type: 'text', text: 'to support' });
      const onOther = await inbound(other, { from, type: 'text', text: 'to sales' });
      assert.equal(onLive.contact_id, onOther.contact_id, 'one contact per number across connections');
      assert.notEqual(onLive.conversation_id, onOther.conversation_id);

      assert.deepEqual(ids(await list(`?contact_id=${onLive.contact_id}`)), [onOther.id, onLive.id]);
      assert.deepEqual(ids(await list(`?contact_id=${onLive.contact_id}&connection_id=${other.id}`)), [onOther.id]);
      assert.deepEqual(ids(await list(`?contact_id=${onLive.contact_id}&direction=inbound&status=received`)), [onOther.id, onLive.id]);
      assert.deepEqual(ids(await list(`?contact_id=${onLive.contact_id}&direction=outbound`)), []);
      assert.deepEqual(ids(await list(`?contact_id=${onLive.contact_id}&status=delivered`)), []);
      const byConnection = await list(`?connection_id=${other.id}`);
      assert.ok(byConnection.data.every((message) => message.connection_id === other.id));
      assert.ok(ids(byConnection).includes(onOther.id));
    });

    it('refuses malformed filters and a cursor that is not in the list', async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'text', text: 'x' });
      for (const query of ['?conversation_id=nope', '?contact_id=cnv_x', '?connection_id=1', '?direction=sideways', '?status=lost', '?unknown=1']) {
        assertError(await server.request('GET', `/v1/messages${query}`, { token: owner.token }), 400, 'validation_failed');
      }
      const otherMessage = await inbound(other, { from: newCustomer(), type: 'text', text: 'y' });
      assertError(
        await server.request('GET', `/v1/messages?conversation_id=${message.conversation_id}&after=${otherMessage.id}`, { token: owner.token }),
        400,
        'validation_failed',
      );
    });
  });

  describe('who may see', () => {
    it("another organization's token gets 404 and empty lists", async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'text', text: 'private' });
      const stranger = await signUp(server);
      assertError(await server.request('GET', `/v1/messages/${message.id}`, { token: stranger.token }), 404, 'resource_not_found');
      assert.deepEqual(ids(await list('', stranger.token)), []);
      for (const query of [`?conversation_id=${message.conversation_id}`, `?contact_id=${message.contact_id}`, `?connection_id=${live.id}`]) {
        const page = await list(query, stranger.token);
        assert.deepEqual(ids(page), [], query);
        assert.equal(page.has_more, false);
      }
    });

    it("a connection key sees only its connection's messages", async () => {
      const mine = await inbound(live, { from: newCustomer(), type: 'text', text: 'mine' });
      const theirs = await inbound(other, { from: newCustomer(), type: 'text', text: 'theirs' });
      const key = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: live.id, scopes: ['messages:read'] });
      assert.equal((await server.request('GET', `/v1/messages/${mine.id}`, { token: key.key })).status, 200);
      assertError(await server.request('GET', `/v1/messages/${theirs.id}`, { token: key.key }), 404, 'resource_not_found');
      const all = await list('?limit=100', key.key);
      assert.ok(all.data.length > 0);
      assert.ok(all.data.every((message) => message.connection_id === live.id));
      assert.deepEqual(ids(await list(`?conversation_id=${theirs.conversation_id}`, key.key)), []);
      assert.deepEqual(ids(await list(`?connection_id=${other.id}`, key.key)), []);
    });

    it("a test key sees only test connections' messages; a live key sees every connection's", async () => {
      const liveMessage = await inbound(live, { from: newCustomer(), type: 'text', text: 'live' });
      const testMessage = await inbound(test, { from: newCustomer(), type: 'text', text: 'test' });
      const testKey = await createKey(server, owner.token, { kind: 'organization', mode: 'test', scopes: ['messages:read'] });
      const liveKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
      assert.equal((await server.request('GET', `/v1/messages/${testMessage.id}`, { token: testKey.key })).body.text.body, 'test');
      assertError(await server.request('GET', `/v1/messages/${liveMessage.id}`, { token: testKey.key }), 404, 'resource_not_found');
      assert.equal((await server.request('GET', `/v1/messages/${testMessage.id}`, { token: liveKey.key })).body.text.body, 'test');
      assert.equal((await server.request('GET', `/v1/messages/${liveMessage.id}`, { token: liveKey.key })).status, 200);
      assert.ok((await list('?limit=100', testKey.key)).data.every((message) => message.connection_id === test.id));
      const byLiveKey = ids(await list('?limit=100', liveKey.key));
      assert.ok(byLiveKey.includes(liveMessage.id) && byLiveKey.includes(testMessage.id));
      assert.deepEqual(ids(await list(`?connection_id=${test.id}`, liveKey.key)), [testMessage.id]);
      assert.deepEqual(ids(await list(`?conversation_id=${liveMessage.conversation_id}`, testKey.key)), []);
      // A dashboard token sees both modes.
      const both = ids(await list('?limit=100'));
      assert.ok(both.includes(liveMessage.id) && both.includes(testMessage.id));
    });

    it('a viewer may read messages', async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'text', text: 'for the viewer' });
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal((await server.request('GET', `/v1/messages/${message.id}`, { token: viewer.token })).status, 200);
      assert.ok(ids(await list(`?conversation_id=${message.conversation_id}`, viewer.token)).includes(message.id));
    });

    it('a key without messages:read is refused with scope_missing', async () => {
      const message = await inbound(live, { from: newCustomer(), type: 'text', text: 'scoped' });
      const unrelated = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['contacts:read'] });
      for (const path of ['/v1/messages', `/v1/messages/${message.id}`]) {
        const error = assertError(await server.request('GET', path, { token: unrelated.key }), 403, 'scope_missing');
        assert.equal(error.required_scope, 'messages:read');
      }
    });
  });
});
