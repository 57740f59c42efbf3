import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { HOUR } from '../../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, createKey, inbound as inboundRow, newCustomer, signUp, type SignedUp } from '../../../test/factories.ts';

type Conversation = Record<string, any> & { id: string; contact_id: string; connection_id: string; state: string; tags: string[]; updated_at: string };
interface Connection {
  id: string;
  phone_number_id: string;
}

describe('the /v1/conversations endpoints', () => {
  let server: TestServer;
  let owner: SignedUp;
  let queries = 0;
  let line: Connection;
  let other: Connection;
  // API keys, not dashboard tokens: the window filter moves the clock a day, past a token's 15 minutes.
  let key: string;
  let lineKey: string;
  let testKey: string;
  let stranger: SignedUp;
  let strangersConversation: Conversation;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite, { onQuery: () => queries++ });
    owner = await signUp(server);
    line = await createConnection(server, owner, { name: 'Support' });
    other = await createConnection(server, owner, { name: 'Sales' });
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    lineKey = (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: line.id })).key;
    testKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
    stranger = await signUp(server, { organizationName: 'Elsewhere Ltd' });
    strangersConversation = await inbound(newCustomer(), await createConnection(server, stranger), stranger.token);
  });

  /** A customer's message through the sandbox; answers its conversation as the API shows it. */
  async function inbound(from = newCustomer(), connection = line, token = key): Promise<Conversation> {
    const message = await inboundRow(server, connection, { from });
    return (await get(message.conversation_id, token)).body as Conversation;
  }

  const get = (id: string, token = key) => server.request('GET', `/v1/conversations/${id}`, { token });
  const patch = (id: string, body: unknown, token = key) => server.request('PATCH', `/v1/conversations/${id}`, { token, body });
  const post = (id: string, action: string, body: unknown, token = key) => server.request('POST', `/v1/conversations/${id}/${action}`, { token, body });
  const list = async (query: string, token = key, limit = 100): Promise<Conversation[]> => {
    const response = await server.request('GET', `/v1/conversations?limit=${limit}&${query}`, { token });
    assert.equal(response.status, 200, response.text);
    return response.body.data as Conversation[];
  };
  const ids = (conversations: Conversation[]) => conversations.map((conversation) => conversation.id);
  const updates = async (conversationId: string) =>
    (await server.app.store.db.selectFrom('events').selectAll().where('type', '=', 'conversation.updated').orderBy('id').execute())
      .map((row) => ({ object: JSON.parse(row.data) as Conversation, previous: JSON.parse(row.previous_attributes ?? 'null') as Record<string, unknown> }))
      .filter((event) => event.object.id === conversationId);

  describe('reading', () => {
    it('a new conversation is open, unassigned, answered by the API, untagged; GET and the list show the same', async () => {
      const conversation = await inbound();
      const response = await get(conversation.id);
      assert.equal(response.status, 200, response.text);
      assert.match(response.body.id, /^cnv_/);
      assert.equal(response.body.object, 'conversation');
      assert.equal(response.body.connection_id, line.id);
      assert.equal(response.body.state, 'open');
      assert.equal(response.body.assignee_id, null);
      assert.equal(response.body.control, 'api');
      assert.deepEqual(response.body.tags, []);
      assert.deepEqual(response.body.metadata, {});
      assert.ok(!('contact' in response.body) && !('last_message' in response.body), 'relations only when expanded');
      const listed = (await list(`contact_id=${conversation.contact_id}`))[0];
      assert.deepEqual(listed, response.body);
    });

    it('pages with the list rules: limit, after, before, order', async () => {
      const connection = await createConnection(server, owner);
      const made = [await inbound(newCustomer(), connection), await inbound(newCustomer(), connection), await inbound(newCustomer(), connection)];
      const first = await server.request('GET', `/v1/conversations?connection_id=${connection.id}&limit=2`, { token: key });
      assert.deepEqual(ids(first.body.data), [made[2]!.id, made[1]!.id]);
      assert.equal(first.body.has_more, true);
      assert.equal(first.body.next_cursor, made[1]!.id);
      const second = await server.request('GET', `/v1/conversations?connection_id=${connection.id}&limit=2&after=${first.body.next_cursor}`, { token: key });
      assert.deepEqual(ids(second.body.data), [made[0]!.id]);
      assert.equal(second.body.has_more, false);
      assert.equal(second.body.next_cursor, null);
      const back = await server.request('GET', `/v1/conversations?connection_id=${connection.id}&limit=1&before=${made[0]!.id}`, { token: key });
      assert.deepEqual(ids(back.body.data), [made[1]!.id]);
      assert.deepEqual(ids(await list(`connection_id=${connection.id}&order=asc`)), ids(made));
      const foreign = assertError(await server.request('GET', `/v1/conversations?after=${strangersConversation.id}`, { token: key }), 400, 'validation_failed');
      assert.equal(foreign.param, '/query/after');
    });

    it('bad filters are validation_failed on their /query pointer', async () => {
      for (const [query, param] of [
        ['state=done', '/query/state'],
        ['assignee=bob', '/query/assignee'],
        ['tag=VIP', '/query/tag'],
        ['window=soon', '/query/window'],
        ['sort=newest', '/query/sort'],
        ['connection_id=ct_1', '/query/connection_id'],
        ['colour=blue', '/query/colour'],
      ]) {
        const error = assertError(await server.request('GET', `/v1/conversations?${query}`, { token: key }), 400, 'validation_failed');
        assert.equal(error.param, param, query);
      }
      assertError(await server.request('GET', '/v1/conversations/msg_01J00000000000000000000000', { token: key }), 400, 'validation_failed');
      assertError(await get('cnv_01J00000000000000000000000'), 404, 'resource_not_found');
    });
  });

  describe('filters', () => {
    it('state', async () => {
      const [open, pending, closed] = [await inbound(), await inbound(), await inbound()];
      await patch(pending.id, { state: 'pending' });
      await patch(closed.id, { state: 'closed' });
      const byState = async (state: string) => ids(await list(`state=${state}`));
      assert.ok((await byState('open')).includes(open.id) && !(await byState('open')).includes(closed.id));
      assert.deepEqual(
        (await byState('pending')).filter((id) => [open.id, pending.id, closed.id].includes(id)),
        [pending.id],
      );
      assert.deepEqual(
        (await byState('closed')).filter((id) => [open.id, pending.id, closed.id].includes(id)),
        [closed.id],
      );
    });

    it('assignee: a member id, or none', async () => {
      const [mine, nobodys] = [await inbound(), await inbound()];
      assert.equal((await post(mine.id, 'assign', { member_id: owner.memberId })).status, 200);
      assert.deepEqual(ids(await list(`assignee=${owner.memberId}`)), [mine.id]);
      const unassigned = ids(await list('assignee=none'));
      assert.ok(unassigned.includes(nobodys.id) && !unassigned.includes(mine.id));
      assert.deepEqual(await list(`assignee=${stranger.memberId}`), [], "another organization's member matches nothing");
    });

    it('tag', async () => {
      const [tagged, plain] = [await inbound(), await inbound()];
      await post(tagged.id, 'tags', { tags: ['refund:requested'] });
      await post(plain.id, 'tags', { tags: ['refund'] });
      assert.deepEqual(ids(await list('tag=refund:requested')), [tagged.id]);
      assert.deepEqual(ids(await list('tag=refund')), [plain.id]);
    });

    it('connection_id and contact_id', async () => {
      const from = newCustomer();
      const [here, there] = [await inbound(from, line), await inbound(from, other)];
      assert.equal(here.contact_id, there.contact_id, 'one contact, two numbers');
      assert.deepEqual(ids(await list(`contact_id=${here.contact_id}`)), [there.id, here.id]);
      assert.deepEqual(ids(await list(`contact_id=${here.contact_id}&connection_id=${other.id}`)), [there.id]);
      assert.ok(ids(await list(`connection_id=${line.id}`)).every((id) => id !== there.id));
      assert.deepEqual(await list(`contact_id=${strangersConversation.contact_id}`), []);
    });
  });

  describe('expand', () => {
    it('embeds the contact and the newest message, on the list and on get', async () => {
      const conversation = await inbound();
      const { body } = await server.request('GET', `/v1/conversations/${conversation.id}?expand=contact,last_message`, { token: key });
      assert.equal(body.contact.object, 'contact');
      assert.equal(body.contact.id, conversation.contact_id);
      assert.equal(body.last_message.object, 'message');
      assert.equal(body.last_message.conversation_id, conversation.id);
      const listed = await list(`contact_id=${conversation.contact_id}&expand=last_message`);
      assert.deepEqual(listed[0]!.last_message, body.last_message);
      assert.ok(!('contact' in listed[0]!));
    });

    it("writes the relations in the schema's order, whatever order they are asked in", async () => {
      const conversation = await inbound();
      for (const path of [`/v1/conversations/${conversation.id}?expand=last_message,contact`, `/v1/conversations?expand=last_message,contact&limit=1`]) {
        const response = await server.request('GET', path, { token: key });
        assert.equal(response.status, 200, response.text);
        const item = ('data' in response.body ? response.body.data[0] : response.body) as Record<string, unknown>;
        assert.deepEqual(Object.keys(item).slice(-2), ['contact', 'last_message'], path);
      }
    });

    it('costs one query per relation per page, whatever the page size', async () => {
      for (let i = 0; i < 7; i++) await inbound();
      // The credential's reads are remembered across these requests (the test clock stands still), so
      // the counts differ only by the page's own queries.
      const page = async (limit: number, expand: string) => {
        queries = 0;
        return { data: await list(expand, owner.token, limit), count: queries };
      };
      const small = await page(2, 'expand=contact,last_message');
      const large = await page(7, 'expand=contact,last_message');
      const none = await page(7, '');
      assert.equal(small.data.length, 2);
      assert.equal(large.data.length, 7);
      assert.ok(
        large.data.every(
          (conversation) => conversation.contact?.id === conversation.contact_id && conversation.last_message?.conversation_id === conversation.id,
        ),
      );
      assert.equal(large.count, small.count);
      assert.equal(large.count, none.count + 2);
    });

    it('a deleted contact expands to null; an unknown relation is refused', async () => {
      const conversation = await inbound();
      assert.equal((await server.request('DELETE', `/v1/contacts/${conversation.contact_id}`, { token: key })).status, 200);
      assert.equal((await server.request('GET', `/v1/conversations/${conversation.id}?expand=contact`, { token: key })).body.contact, null);
      const error = assertError(await server.request('GET', '/v1/conversations?expand=messages', { token: key }), 400, 'validation_failed');
      assert.equal(error.param, '/query/expand');
    });
  });

  describe('PATCH', () => {
    it('changes the state, emitting conversation.updated with only what changed', async () => {
      const conversation = await inbound();
      server.clock.advance(1000);
      const response = await patch(conversation.id, { state: 'closed' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.state, 'closed');
      assert.equal(response.body.updated_at, server.clock.now().toISOString());
      const [event, ...more] = await updates(conversation.id);
      assert.equal(more.length, 0);
      assert.deepEqual(event!.object, response.body);
      assert.deepEqual(event!.previous, { state: 'open', updated_at: conversation.updated_at });
    });

    it('merges metadata (null removes a key); a PATCH that changes nothing writes and emits nothing', async () => {
      const conversation = await inbound();
      const first = await patch(conversation.id, { metadata: { a: 1, b: 2 } });
      assert.deepEqual(first.body.metadata, { a: 1, b: 2 });
      server.clock.advance(1000);
      const merged = await patch(conversation.id, { metadata: { a: null, c: { deep: true } } });
      assert.deepEqual(merged.body.metadata, { b: 2, c: { deep: true } });
      assert.deepEqual((await updates(conversation.id)).at(-1)!.previous, { metadata: { a: 1, b: 2 }, updated_at: first.body.updated_at });
      server.clock.advance(1000);
      const same = await patch(conversation.id, { state: 'open', metadata: { b: 2 } });
      assert.deepEqual(same.body, merged.body);
      assert.equal((await updates(conversation.id)).length, 2);
    });

    it('refuses unknown fields, bad states and too much metadata', async () => {
      const conversation = await inbound();
      for (const [body, param] of [
        [{ assignee_id: null }, '/assignee_id'],
        [{ state: 'archived' }, '/state'],
        [{ tags: ['x'] }, '/tags'],
      ] as const) {
        assert.equal(assertError(await patch(conversation.id, body), 400, 'validation_failed').param, param);
      }
      await patch(conversation.id, { metadata: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, i])) });
      const error = assertError(
        await patch(conversation.id, { metadata: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`j${i}`, i])) }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/metadata');
    });

    it('a new customer message reopens a closed or a pending conversation, and says so', async () => {
      for (const state of ['closed', 'pending']) {
        const from = newCustomer();
        const conversation = await inbound(from);
        await patch(conversation.id, { state });
        const again = await inbound(from);
        assert.equal(again.id, conversation.id);
        assert.equal(again.state, 'open');
        const reopened = (await updates(conversation.id)).at(-1)!;
        assert.equal(reopened.object.state, 'open');
        assert.equal(reopened.previous.state, state);
      }
    });
  });

  describe('assign', () => {
    it('assigns to a member and unassigns with null; each change is conversation.updated, a repeat is not', async () => {
      const conversation = await inbound();
      const agent = await addMember(server, owner.organizationId, 'agent');
      const assigned = await post(conversation.id, 'assign', { member_id: agent.memberId });
      assert.equal(assigned.status, 200, assigned.text);
      assert.equal(assigned.body.assignee_id, agent.memberId);
      assert.equal((await post(conversation.id, 'assign', { member_id: agent.memberId })).status, 200);
      const unassigned = await post(conversation.id, 'assign', { member_id: null }, agent.token);
      assert.equal(unassigned.body.assignee_id, null);
      assert.deepEqual(
        (await updates(conversation.id)).map((event) => [event.previous.assignee_id, event.object.assignee_id]),
        [
          [null, agent.memberId],
          [agent.memberId, null],
        ],
      );
    });

    it("another organization's member, a removed one and an unknown one are 404 on /member_id; nothing changes", async () => {
      const conversation = await inbound();
      const removed = await addMember(server, owner.organizationId, 'agent');
      await server.app.store.db.deleteFrom('members').where('id', '=', removed.memberId).execute();
      for (const memberId of [stranger.memberId, removed.memberId, 'mem_01J00000000000000000000000']) {
        const error = assertError(await post(conversation.id, 'assign', { member_id: memberId }), 404, 'resource_not_found');
        assert.equal(error.param, '/member_id');
      }
      assert.equal(
        assertError(await post(conversation.id, 'assign', { member_id: 'ct_01J00000000000000000000000' }), 400, 'validation_failed').param,
        '/member_id',
      );
      assert.equal(assertError(await post(conversation.id, 'assign', {}), 400, 'validation_failed').param, '/member_id');
      assert.deepEqual(await updates(conversation.id), []);
    });

    it('a member removed later leaves their conversations unassigned', async () => {
      const conversation = await inbound();
      const leaving = await addMember(server, owner.organizationId, 'agent');
      await post(conversation.id, 'assign', { member_id: leaving.memberId });
      await server.app.store.db.deleteFrom('members').where('id', '=', leaving.memberId).execute();
      assert.equal((await get(conversation.id)).body.assignee_id, null);
    });
  });

  describe('control', () => {
    it('takes each of api, automation, agent and app, and refuses anything else', async () => {
      const conversation = await inbound();
      for (const control of ['automation', 'agent', 'app', 'api']) {
        const response = await post(conversation.id, 'control', { control });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.body.control, control);
      }
      assert.deepEqual(
        (await updates(conversation.id)).map((event) => event.previous.control),
        ['api', 'automation', 'agent', 'app'],
      );
      assert.equal(assertError(await post(conversation.id, 'control', { control: 'bot' }), 400, 'validation_failed').param, '/control');
    });

    it('handToApp gives the conversation to the business app once', async () => {
      const conversation = await inbound();
      const { conversations } = server.app.services;
      const db = server.app.store.db;
      assert.equal((await get(conversation.id)).body.control, 'api');
      await db.transaction().execute((trx) => conversations.handToApp(trx, conversation.id));
      await db.transaction().execute((trx) => conversations.handToApp(trx, conversation.id));
      assert.equal((await get(conversation.id)).body.control, 'app');
      assert.deepEqual(
        (await updates(conversation.id)).map((event) => event.previous.control),
        ['api'],
      );
    });
  });

  describe('tags', () => {
    it('adds as a set, sorted; removes; each change is conversation.updated', async () => {
      const conversation = await inbound();
      const added = await post(conversation.id, 'tags', { tags: ['vip', 'billing:late', 'a_b-c'] });
      assert.equal(added.status, 200, added.text);
      assert.deepEqual(added.body.tags, ['a_b-c', 'billing:late', 'vip']);
      assert.deepEqual((await post(conversation.id, 'tags', { tags: ['vip', 'new'] })).body.tags, ['a_b-c', 'billing:late', 'new', 'vip']);
      assert.equal((await post(conversation.id, 'tags', { tags: ['vip'] })).status, 200);
      const removed = await server.request('DELETE', `/v1/conversations/${conversation.id}/tags/billing:late`, { token: key });
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(removed.body.tags, ['a_b-c', 'new', 'vip']);
      assert.deepEqual(
        ids(await list('tag=billing:late')).filter((id) => id === conversation.id),
        [],
      );
      assert.deepEqual(
        (await updates(conversation.id)).map((event) => event.previous.tags),
        [[], ['a_b-c', 'billing:late', 'vip'], ['a_b-c', 'billing:late', 'new', 'vip']],
      );
    });

    it('removing a tag the conversation does not have answers it unchanged and emits nothing', async () => {
      const conversation = await inbound();
      const response = await server.request('DELETE', `/v1/conversations/${conversation.id}/tags/absent`, { token: key });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, conversation);
      assert.deepEqual(await updates(conversation.id), []);
    });

    it('refuses tags too long, of other characters, repeated, or more than 20 in all, writing nothing', async () => {
      const conversation = await inbound();
      for (const tag of ['x'.repeat(51), 'VIP', 'two words', 'café', '', 'a/b']) {
        const error = assertError(await post(conversation.id, 'tags', { tags: [tag] }), 400, 'validation_failed');
        assert.equal(error.param, '/tags/0', JSON.stringify(tag));
      }
      assert.equal((await post(conversation.id, 'tags', { tags: ['x'.repeat(50)] })).status, 200, 'fifty characters are allowed');
      assertError(await post(conversation.id, 'tags', { tags: ['a', 'a'] }), 400, 'validation_failed');
      assert.equal(assertError(await post(conversation.id, 'tags', { tags: [] }), 400, 'validation_failed').param, '/tags');
      const twentyOne = Array.from({ length: 21 }, (_, i) => `t${i}`);
      assert.equal(assertError(await post(conversation.id, 'tags', { tags: twentyOne }), 400, 'validation_failed').param, '/tags');
      assert.equal((await post(conversation.id, 'tags', { tags: twentyOne.slice(0, 19) })).status, 200);
      const error = assertError(await post(conversation.id, 'tags', { tags: ['one-more', 'and-another'] }), 400, 'validation_failed');
      assert.equal(error.param, '/tags');
      assert.equal(error.details[0].code, 'too_many');
      assert.equal((await get(conversation.id)).body.tags.length, 20);
      assert.deepEqual(ids(await list('tag=one-more')), []);
      assert.equal(
        assertError(await server.request('DELETE', `/v1/conversations/${conversation.id}/tags/Not-A-Tag`, { token: key }), 400, 'validation_failed').param,
        '/path/tag',
      );
    });
  });

  describe('who may see and change', () => {
    it("another organization's conversation is 404 to every endpoint, and never listed", async () => {
      const id = strangersConversation.id;
      assertError(await get(id), 404, 'resource_not_found');
      assertError(await patch(id, { state: 'closed' }), 404, 'resource_not_found');
      assertError(await post(id, 'assign', { member_id: null }), 404, 'resource_not_found');
      assertError(await post(id, 'control', { control: 'agent' }), 404, 'resource_not_found');
      assertError(await post(id, 'tags', { tags: ['x'] }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/conversations/${id}/tags/x`, { token: key }), 404, 'resource_not_found');
      assert.ok(!ids(await list('')).includes(id));
      assert.ok(ids(await list('', stranger.token)).includes(id));
      assert.deepEqual(await updates(id), []);
    });

    it("a connection key sees its own connection's conversations only; a test key sees no live one", async () => {
      const [mine, notMine] = [await inbound(newCustomer(), line), await inbound(newCustomer(), other)];
      assert.equal((await get(mine.id, lineKey)).status, 200);
      assertError(await get(notMine.id, lineKey), 404, 'resource_not_found');
      assertError(await patch(notMine.id, { state: 'closed' }, lineKey), 404, 'resource_not_found');
      const listed = ids(await list('', lineKey));
      assert.ok(listed.includes(mine.id) && !listed.includes(notMine.id));
      assertError(await get(mine.id, testKey), 404, 'resource_not_found');
      assert.deepEqual(await list('', testKey), []);
    });

    it('a viewer may read and change nothing; an agent may change', async () => {
      const conversation = await inbound();
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal((await get(conversation.id, viewer.token)).status, 200);
      assert.equal((await server.request('GET', '/v1/conversations', { token: viewer.token })).status, 200);
      for (const [method, path, body] of [
        ['PATCH', '', { state: 'closed' }],
        ['POST', '/assign', { member_id: null }],
        ['POST', '/control', { control: 'agent' }],
        ['POST', '/tags', { tags: ['x'] }],
        ['DELETE', '/tags/x', undefined],
      ] as const) {
        const error = assertError(
          await server.request(method, `/v1/conversations/${conversation.id}${path}`, { token: viewer.token, ...(body ? { body } : {}) }),
          403,
          'scope_missing',
        );
        assert.equal(error.required_scope, 'messages:write');
      }
      const agent = await addMember(server, owner.organizationId, 'agent');
      assert.equal((await patch(conversation.id, { state: 'pending' }, agent.token)).status, 200);
    });
  });

  describe('after a contact merge', () => {
    it("the survivor's conversation takes the folded one's tags and, when it had none, its assignee", async () => {
      const [survivor, source] = [await inbound(), await inbound()];
      await post(survivor.id, 'tags', { tags: ['kept'] });
      await post(source.id, 'tags', { tags: ['folded', 'kept'] });
      await post(source.id, 'assign', { member_id: owner.memberId });
      const merged = await server.request('POST', `/v1/contacts/${survivor.contact_id}/merge`, { token: key, body: { source_contact_id: source.contact_id } });
      assert.equal(merged.status, 200, merged.text);
      const after = (await get(survivor.id)).body;
      assert.deepEqual(after.tags, ['folded', 'kept']);
      assert.equal(after.assignee_id, owner.memberId);
      assert.deepEqual(ids(await list('tag=folded')), [survivor.id]);
      assertError(await get(source.id), 404, 'resource_not_found');
    });

    it('is refused when the folded conversations would hold more than 20 tags together', async () => {
      const [survivor, source] = [await inbound(), await inbound()];
      await post(survivor.id, 'tags', { tags: Array.from({ length: 15 }, (_, i) => `a${i}`) });
      await post(source.id, 'tags', { tags: Array.from({ length: 15 }, (_, i) => `b${i}`) });
      const error = assertError(
        await server.request('POST', `/v1/contacts/${survivor.contact_id}/merge`, { token: key, body: { source_contact_id: source.contact_id } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/source_contact_id');
      assert.equal((await get(source.id)).status, 200, 'nothing was merged');
    });
  });

  // Last: it moves the clock a day.
  describe('the window filter', () => {
    it('open: the customer wrote less than 24 hours ago; closed: longer ago', async () => {
      const old = await inbound();
      server.clock.advance(24 * HOUR);
      const fresh = await inbound();
      const open = ids(await list('window=open'));
      const closed = ids(await list('window=closed'));
      assert.ok(open.includes(fresh.id) && !open.includes(old.id));
      assert.ok(closed.includes(old.id) && !closed.includes(fresh.id));
      const closes = Date.parse(fresh.window_expires_at as string);
      server.clock.set(closes - 1);
      assert.ok(ids(await list('window=open')).includes(fresh.id));
      server.clock.set(closes);
      assert.ok(ids(await list('window=closed')).includes(fresh.id));
    });
  });
});

// A server of its own: this moves the clock, which the query counts above must not see.
describe('GET /v1/conversations?sort=recent', () => {
  let server: TestServer;
  let owner: SignedUp;
  let key: string;
  let strangersConversation: Conversation;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const stranger = await signUp(server, { organizationName: 'Elsewhere Ltd' });
    const message = await inboundRow(server, await createConnection(server, stranger), { from: newCustomer() });
    strangersConversation = { id: message.conversation_id } as Conversation;
  });
  const inbound = async (from: string, connection: Connection) => {
    const message = await inboundRow(server, connection, { from });
    return (await server.request('GET', `/v1/conversations/${message.conversation_id}`, { token: key })).body as Conversation;
  };
  const list = async (query: string): Promise<Conversation[]> => {
    const response = await server.request('GET', `/v1/conversations?limit=100&${query}`, { token: key });
    assert.equal(response.status, 200, response.text);
    return response.body.data as Conversation[];
  };
  const ids = (conversations: Conversation[]) => conversations.map((conversation) => conversation.id);

  it('sort=recent: the latest message first, ties by id, the same cursors both ways', async () => {
    const connection = await createConnection(server, owner);
    const customers = [newCustomer(), newCustomer(), newCustomer()];
    const made: Conversation[] = [];
    for (const customer of customers) {
      made.push(await inbound(customer, connection));
      server.clock.advance(60_000);
    }
    const recent = (query = '') => list(`connection_id=${connection.id}&sort=recent${query}`);
    assert.deepEqual(ids(await recent()), [made[2]!.id, made[1]!.id, made[0]!.id]);
    // The oldest conversation's customer writes again: it comes first; created order is unmoved.
    await inbound(customers[0]!, connection);
    assert.deepEqual(ids(await recent()), [made[0]!.id, made[2]!.id, made[1]!.id]);
    assert.deepEqual(ids(await list(`connection_id=${connection.id}`)), [made[2]!.id, made[1]!.id, made[0]!.id]);
    assert.deepEqual(ids(await recent('&order=asc')), [made[1]!.id, made[2]!.id, made[0]!.id]);
    // Two at the same instant: the id breaks the tie, so a page boundary between them loses neither.
    await inbound(customers[1]!, connection);
    await inbound(customers[2]!, connection);
    assert.deepEqual(ids(await recent()), [made[2]!.id, made[1]!.id, made[0]!.id]);
    const walked: string[] = [];
    let after: string | null = null;
    do {
      const page: { body: { data: Conversation[]; next_cursor: string | null } } = await server.request(
        'GET',
        `/v1/conversations?connection_id=${connection.id}&sort=recent&limit=1${after ? `&after=${after}` : ''}`,
        { token: key },
      );
      walked.push(...ids(page.body.data));
      after = page.body.next_cursor;
    } while (after);
    assert.deepEqual(walked, [made[2]!.id, made[1]!.id, made[0]!.id]);
    const back = await server.request('GET', `/v1/conversations?connection_id=${connection.id}&sort=recent&limit=2&before=${made[0]!.id}`, { token: key });
    assert.deepEqual(ids(back.body.data), [made[2]!.id, made[1]!.id]);
    const foreign = assertError(
      await server.request('GET', `/v1/conversations?sort=recent&after=${strangersConversation.id}`, { token: key }),
      400,
      'validation_failed',
    );
    assert.equal(foreign.param, '/query/after');
  });
});
