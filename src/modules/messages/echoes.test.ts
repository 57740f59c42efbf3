import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { createConnection, createKey, newCustomer, sandboxMessage, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

type Message = Record<string, any> & { id: string; conversation_id: string; contact_id: string };

describe('coexistence echoes', () => {
  let server: TestServer;
  let owner: SignedUp;
  let key: string;
  let line: { id: string; phone_number_id: string };
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner, { coexistence: true, name: 'Shop phone' });
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** What the sandbox sends when the owner writes from the business app, or a customer writes in; answers it as the API shows it. */
  async function control(path: '/echo' | '/inbound', body: Record<string, unknown>): Promise<Message> {
    const row = await sandboxMessage(server, path, line, body);
    return (await server.request('GET', `/v1/messages/${row.id}`, { token: key })).body as Message;
  }

  const eventsOf = async (type: string, id: string) =>
    (await server.app.store.db.selectFrom('events').select(['type', 'data']).where('type', '=', type).execute())
      .map((row) => JSON.parse(row.data) as { id: string })
      .filter((object) => object.id === id);

  it('files the owner’s message in the thread, emits message.echo, and hands the conversation to the app', async () => {
    const customer = newCustomer();
    await control('/inbound', { from: customer, text: 'Do you have it in blue?' });
    const echo = await control('/echo', { to: customer, text: 'Yes, in stock!' });
    assert.equal(echo.direction, 'outbound');
    assert.equal(echo.echo, true);
    assert.equal(echo.status, 'sent');
    assert.deepEqual(echo.text, { body: 'Yes, in stock!' });
    assert.equal((await eventsOf('message.echo', echo.id)).length, 1);
    const conversation = await server.request('GET', `/v1/conversations/${echo.conversation_id}`, { token: key });
    assert.equal(conversation.status, 200, conversation.text);
    assert.equal(conversation.body.control, 'app', 'automations stand back while the owner answers');
  });

  it('files an echo once, however often it arrives', async () => {
    const customer = newCustomer();
    const echo = await control('/echo', { to: customer, text: 'Hello from the shop' });
    const connection = (await server.app.services.connections.findServing(server.app.store.db, line.phone_number_id))!;
    const again = await server.app.store.db.transaction().execute((trx) =>
      server.app.services.messages.recordEcho(trx, connection, {
        providerMessageId: echo.provider_message_id,
        to: customer,
        sentAt: new Date(echo.sent_at),
        body: { type: 'text', content: { body: 'Hello from the shop' }, context: undefined, extra: {} },
      }),
    );
    assert.equal(again, undefined);
    const rows = await server.app.store.db.selectFrom('messages').select('id').where('provider_message_id', '=', echo.provider_message_id).execute();
    assert.equal(rows.length, 1);
    assert.equal((await eventsOf('message.echo', echo.id)).length, 1);
  });

  it('an echo arriving before the customer’s message it answers: one thread, and the window opens only with the customer’s message', async () => {
    const customer = newCustomer();
    const echo = await control('/echo', { to: customer, text: 'Thanks for your message!' });
    const closed = await server.request('GET', `/v1/contacts/${echo.contact_id}/window?connection_id=${line.id}`, { token: key });
    assert.equal(closed.status, 200, closed.text);
    assert.equal(closed.body.open, false, 'the owner’s own message opens no window');
    const inbound = await control('/inbound', { from: customer, text: 'Hi, I wrote earlier' });
    assert.equal(inbound.conversation_id, echo.conversation_id);
    assert.equal(inbound.contact_id, echo.contact_id);
    const open = await server.request('GET', `/v1/contacts/${echo.contact_id}/window?connection_id=${line.id}`, { token: key });
    assert.equal(open.body.open, true);
    assert.equal((await eventsOf('conversation.created', echo.conversation_id)).length, 1);
  });
});
