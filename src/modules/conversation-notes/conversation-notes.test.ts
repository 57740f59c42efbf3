import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  inbound,
  newCustomer,
  signUp,
  type SignedUp,
  startServerWithOwner,
} from '../../../test/factories.ts';

describe('conversation notes', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: { id: string; phone_number_id: string };
  let key: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** A customer's message on `connection`; answers the id and contact of its conversation. */
  async function conversationWith(connection = line, from = newCustomer()): Promise<{ id: string; contact_id: string }> {
    const message = await inbound(server, connection, { from });
    return { id: message.conversation_id, contact_id: message.contact_id };
  }

  const write = (conversationId: string, body: unknown, token = owner.token) =>
    server.request('POST', `/v1/conversations/${conversationId}/notes`, { token, body });
  const read = (conversationId: string, query = '', token = owner.token) =>
    server.request('GET', `/v1/conversations/${conversationId}/notes${query}`, { token });

  it('a note answers 201 with its author: the member for a dashboard token, none for an API key', async () => {
    const conversation = await conversationWith();
    const byMember = await write(conversation.id, { body: 'Customer is on holiday until Monday.', metadata: { ticket: 'T-1' } });
    assert.equal(byMember.status, 201, byMember.text);
    assert.match(byMember.body.id, /^note_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(
      { ...byMember.body, id: undefined },
      {
        id: undefined,
        object: 'note',
        conversation_id: conversation.id,
        author: { member_id: owner.memberId, credential_kind: 'dashboard_token' },
        body: 'Customer is on holiday until Monday.',
        metadata: { ticket: 'T-1' },
        created_at: server.clock.now().toISOString(),
      },
    );
    const byKey = await write(conversation.id, { body: 'Refund approved.' }, key);
    assert.deepEqual(byKey.body.author, { member_id: null, credential_kind: 'organization_key' });
    assert.deepEqual(byKey.body.metadata, {});
  });

  it('is internal: nothing is sent to the customer and no event is emitted', async () => {
    const conversation = await conversationWith();
    const messagesBefore = await server.app.store.db.selectFrom('messages').select('id').where('conversation_id', '=', conversation.id).execute();
    const eventsBefore = await server.app.store.db.selectFrom('events').select('id').execute();
    assert.equal((await write(conversation.id, { body: 'Do not promise a date.' })).status, 201);
    await server.app.worker.drain();
    assert.deepEqual(await server.app.store.db.selectFrom('messages').select('id').where('conversation_id', '=', conversation.id).execute(), messagesBefore);
    assert.equal((await server.app.store.db.selectFrom('events').select('id').execute()).length, eventsBefore.length);
  });

  it('lists with the list rules, newest first', async () => {
    const conversation = await conversationWith();
    const notes = [];
    for (const body of ['one', 'two', 'three']) notes.push((await write(conversation.id, { body })).body);
    const page = await read(conversation.id, '?limit=2');
    assert.deepEqual(page.body.data, [notes[2], notes[1]]);
    assert.equal(page.body.has_more, true);
    const rest = await read(conversation.id, `?limit=2&after=${page.body.next_cursor}`);
    assert.deepEqual(rest.body.data, [notes[0]]);
    assert.equal(rest.body.has_more, false);
    assert.deepEqual((await read(conversation.id, '?order=asc')).body.data, notes);
    const other = await conversationWith();
    assert.deepEqual((await read(other.id)).body.data, [], "another conversation's notes are not its own");
    assert.equal(assertError(await read(other.id, `?after=${notes[0].id}`), 400, 'validation_failed').param, '/query/after');
  });

  it('refuses an empty body, one over 4,000 characters and unknown fields', async () => {
    const conversation = await conversationWith();
    for (const [body, param] of [
      [{ body: '' }, '/body'],
      [{ body: 'x'.repeat(4001) }, '/body'],
      [{}, '/body'],
      [{ body: 'x', pinned: true }, '/pinned'],
    ] as const) {
      assert.equal(assertError(await write(conversation.id, body), 400, 'validation_failed').param, param);
    }
    assert.equal((await write(conversation.id, { body: 'x'.repeat(4000) })).status, 201);
  });

  it("another organization's conversation, or an unknown one, is 404 both ways", async () => {
    const stranger = await signUp(server, { organizationName: 'Elsewhere Ltd' });
    const theirs = await conversationWith(await createConnection(server, stranger));
    assert.equal((await write(theirs.id, { body: 'theirs' }, stranger.token)).status, 201);
    assertError(await write(theirs.id, { body: 'peeking' }), 404, 'resource_not_found');
    assertError(await read(theirs.id), 404, 'resource_not_found');
    assertError(await read('cnv_01J00000000000000000000000'), 404, 'resource_not_found');
    assert.equal((await read(theirs.id, '', stranger.token)).body.data.length, 1);
  });

  it("a connection key reaches only its own connection's notes", async () => {
    const elsewhere = await createConnection(server, owner);
    const lineKey = (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: line.id })).key;
    const [mine, notMine] = [await conversationWith(line), await conversationWith(elsewhere)];
    assert.equal((await write(mine.id, { body: 'ok' }, lineKey)).body.author.credential_kind, 'connection_key');
    assertError(await write(notMine.id, { body: 'no' }, lineKey), 404, 'resource_not_found');
    assertError(await read(notMine.id, '', lineKey), 404, 'resource_not_found');
  });

  it('a viewer may read notes, not write them', async () => {
    const conversation = await conversationWith();
    await write(conversation.id, { body: 'seen by all' });
    const viewer = await addMember(server, owner.organizationId, 'viewer');
    assert.equal((await read(conversation.id, '', viewer.token)).body.data.length, 1);
    const error = assertError(await write(conversation.id, { body: 'mine' }, viewer.token), 403, 'scope_missing');
    assert.equal(error.required_scope, 'messages:write');
  });

  it("a contact merge moves the folded conversation's notes to the one it is folded into", async () => {
    const [survivor, source] = [await conversationWith(), await conversationWith()];
    const kept = (await write(survivor.id, { body: 'on the survivor' })).body;
    const moved = (await write(source.id, { body: 'on the source' })).body;
    const merge = await server.request('POST', `/v1/contacts/${survivor.contact_id}/merge`, {
      token: owner.token,
      body: { source_contact_id: source.contact_id },
    });
    assert.equal(merge.status, 200, merge.text);
    assert.deepEqual((await read(survivor.id, '?order=asc')).body.data, [kept, { ...moved, conversation_id: survivor.id }]);
    assertError(await read(source.id), 404, 'resource_not_found');
  });
});
