import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { HOUR, MINUTE } from '../../lib/clock.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import {
  assertError,
  createConnection,
  defineTemplate,
  createKey,
  inbound as inboundRow,
  newCustomer,
  settle,
  signUp,
  type SignedUp,
  startServerWithOwner,
} from '../../../test/factories.ts';
import { SEND_TIMEOUT_GRACE_MS } from './index.ts';

const idempotencyKey = () => `key-${randomBytes(8).toString('hex')}`;

interface Connection {
  id: string;
  phone_number_id: string;
}
type Message = Record<string, any> & { id: string; conversation_id: string; contact_id: string; status: string };

describe('sending messages', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: Connection;
  let receiver: Receiver;
  // An API key, not the dashboard token: the window tests move the clock a day, past a token's 15 minutes.
  let key: string;
  let connectionKey: string;
  let readOnlyKey: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    connectionKey = (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: line.id })).key;
    readOnlyKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] })).key;
    receiver = await startReceiver(suite);
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: key,
      body: { url: receiver.url, events: ['message.status', 'message.sent', 'conversation.created'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
  });

  /** Settles, then lets retries fall due (a throttled send comes back seconds later) and settles again. */
  async function settleWithRetries(): Promise<void> {
    await settle(server);
    server.clock.advance(MINUTE);
    await settle(server);
  }

  /** A customer's message through the sandbox; answers it as the API shows it. */
  async function inbound(from: string, connection = line): Promise<Message> {
    const row = await inboundRow(server, connection, { from, text: 'Hi, is my order on its way?' });
    return getMessage(row.id);
  }

  const send = (body: Record<string, unknown>, options: { token?: string; key?: string | null } = {}) =>
    server.request('POST', '/v1/messages', {
      token: options.token ?? key,
      body: { connection_id: line.id, ...body },
      headers: options.key === null ? {} : { 'idempotency-key': options.key ?? idempotencyKey() },
    });

  const getMessage = async (id: string): Promise<Message> => (await server.request('GET', `/v1/messages/${id}`, { token: key })).body as Message;

  /**
   * The webhook deliveries about one message, in the order their events happened: deliveries run
   * concurrently and may arrive in any order, but event ids sort by creation.
   */
  const deliveriesFor = (id: string) =>
    receiver.received
      .map((request) => JSON.parse(request.body) as { id: string; type: string; data: { object: Message } })
      .filter((event) => event.data.object.id === id)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

  describe('a text in the customer service window', () => {
    it('is stored queued, sent through the queue, then walks sent → delivered → read: four message.status deliveries', async () => {
      const from = newCustomer();
      const received = await inbound(from);
      const response = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Yes, it ships today.' } });
      assert.equal(response.status, 201, response.text);
      const message = response.body as Message;
      assert.match(message.id, /^msg_/);
      assert.equal(message.status, 'queued');
      assert.equal(message.direction, 'outbound');
      assert.equal(message.provider_message_id, null);
      assert.equal(message.conversation_id, received.conversation_id, 'the reply joins the customer’s conversation');
      assert.deepEqual(message.text, { body: 'Yes, it ships today.' });
      await settle(server);
      const read = await getMessage(message.id);
      assert.equal(read.status, 'read');
      assert.match(read.provider_message_id, /^wamid\./);
      assert.ok(read.sent_at);
      const events = deliveriesFor(message.id);
      assert.deepEqual(
        events.filter((event) => event.type === 'message.status').map((event) => event.data.object.status),
        ['queued', 'sent', 'delivered', 'read'],
      );
      assert.equal(events.filter((event) => event.type === 'message.sent').length, 1);
      const sandboxMessage = await server.app.sandbox!.state.findMessage(read.provider_message_id);
      assert.equal(sandboxMessage?.waId, from);
      assert.equal(sandboxMessage?.bizOpaqueCallbackData, message.id, 'every send names our message, for statuses that overtake the answer');
    });

    it('to a number: the first message to it creates the contact and the conversation', async () => {
      // A free-form message cannot open a conversation; a number that wrote before can be addressed by number.
      const from = newCustomer();
      const received = await inbound(from);
      const response = await send({ to: `+${from}`, type: 'text', text: { body: 'By number' } });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.contact_id, received.contact_id);
    });

    it('carries a reply context and reacts to a message of the conversation', async () => {
      const received = await inbound(newCustomer());
      const reply = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Replying' }, reply_to: received.id });
      assert.equal(reply.status, 201, reply.text);
      assert.equal(reply.body.context.reply_to, received.id);
      const reaction = await server.request('POST', `/v1/messages/${received.id}/reactions`, {
        token: key,
        body: { emoji: '👍' },
        headers: { 'idempotency-key': idempotencyKey() },
      });
      assert.equal(reaction.status, 201, reaction.text);
      assert.equal(reaction.body.type, 'reaction');
      assert.deepEqual(reaction.body.reaction, { message_id: received.id, emoji: '👍' });
      await settle(server);
      assert.equal((await getMessage(reaction.body.id)).status, 'read');
      assert.equal((await getMessage(reply.body.id)).status, 'read');
    });

    it('sends location, contacts and interactive content in the provider’s shape', async () => {
      const received = await inbound(newCustomer());
      const bodies = [
        { type: 'location', location: { latitude: 51.5, longitude: -0.12, name: 'Shop' } },
        { type: 'contacts', contacts: [{ name: { formatted_name: 'Ada Lovelace' }, phones: [{ phone: '+447700900123', type: 'work' }] }] },
        {
          type: 'interactive',
          interactive: {
            type: 'button',
            body: { text: 'Pick one' },
            action: {
              buttons: [
                { type: 'reply', reply: { id: 'yes', title: 'Yes' } },
                { type: 'reply', reply: { id: 'no', title: 'No' } },
              ],
            },
          },
        },
        {
          type: 'interactive',
          interactive: {
            type: 'list',
            body: { text: 'Menu' },
            action: { button: 'Open', sections: [{ title: 'Sizes', rows: [{ id: 's', title: 'Small' }] }] },
          },
        },
        { type: 'image', image: { link: 'https://example.com/cat.jpg', caption: 'A cat' } },
      ];
      for (const body of bodies) {
        const response = await send({ contact_id: received.contact_id, ...body });
        assert.equal(response.status, 201, `${body.type}: ${response.text}`);
      }
      await settle(server);
      const page = await server.request('GET', `/v1/messages?conversation_id=${received.conversation_id}&direction=outbound&status=read`, { token: key });
      assert.equal(page.body.data.length, bodies.length, 'the sandbox accepted each payload and walked it to read');
    });
  });

  describe('a locked conversation', () => {
    it('refuses a send by anyone but the lock’s holder, naming holder and expiry, and stores nothing', async () => {
      const received = await inbound(newCustomer());
      const locked = await server.request('POST', `/v1/conversations/${received.conversation_id}/lock`, { token: owner.token, body: { ttl_seconds: 300 } });
      assert.ok([200, 201].includes(locked.status), locked.text);
      const refused = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'From the API' } });
      assertError(refused, 409, 'conversation_locked');
      assert.equal(refused.body.error.lock.holder.member_id, owner.memberId);
      assert.ok(refused.body.error.lock.expires_at);
      const outbound = await server.request('GET', `/v1/messages?conversation_id=${received.conversation_id}&direction=outbound`, { token: key });
      assert.deepEqual(outbound.body.data, []);
      const holder = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'From the holder' } }, { token: owner.token });
      assert.equal(holder.status, 201, holder.text);
      assert.equal((await server.request('DELETE', `/v1/conversations/${received.conversation_id}/lock`, { token: owner.token })).status, 200);
      assert.equal((await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Released' } })).status, 201);
    });
  });

  describe('media', () => {
    // The smallest PNG signature the upload checks, then filler: enough for the provider's type check.
    const png = () => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(500)]);

    it('sends an upload by its media id: uploaded to the provider for the number at the moment of sending', async () => {
      const form = new FormData();
      form.append('file', new Blob([png()], { type: 'image/png' }), 'receipt.png');
      const uploaded = await fetch(`${server.url}/v1/media`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      const media = (await uploaded.json()) as { id: string };
      assert.equal(uploaded.status, 201, JSON.stringify(media));
      const received = await inbound(newCustomer());
      const response = await send({ contact_id: received.contact_id, type: 'image', image: { media_id: media.id, caption: 'Your receipt' } });
      assert.equal(response.status, 201, response.text);
      assert.deepEqual(response.body.image, { media_id: media.id, caption: 'Your receipt' });
      await settle(server);
      const sent = await getMessage(response.body.id);
      assert.equal(sent.status, 'read');
      const wrongKind = await send({ contact_id: received.contact_id, type: 'audio', audio: { media_id: media.id } });
      assertError(wrongKind, 415, 'media_type_unsupported');
      assert.equal(wrongKind.body.error.param, '/audio/media_id');
    });

    it('keeps what a customer sends: the message names our media id, and the worker fetches the bytes', async () => {
      const bytes = png();
      const row = await inboundRow(server, line, {
        type: 'image',
        image: { mime_type: 'image/png', content_base64: bytes.toString('base64'), caption: 'my receipt' },
      });
      const message = await getMessage(row.id);
      assert.equal(message.type, 'image');
      assert.match(message.image.media_id, /^med_/);
      assert.equal(message.image.caption, 'my receipt');
      const download = await fetch(`${server.url}/v1/media/${message.image.media_id}/download`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(download.status, 200);
      assert.deepEqual(Buffer.from(await download.arrayBuffer()), bytes);
    });
  });

  describe('the 24-hour window', () => {
    it('refuses a free-form message to a customer who never wrote, before storing anything', async () => {
      const before = await server.app.store.db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const number = newCustomer();
      const response = await send({ to: `+${number}`, type: 'text', text: { body: 'Cold outreach' } });
      assertError(response, 409, 'window_closed');
      assert.ok(Array.isArray(response.body.error.templates), 'the error lists the approved templates');
      const after = await server.app.store.db
        .selectFrom('messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
      const contacts = await server.request('GET', `/v1/contacts?phone_number=%2B${number}`, { token: key });
      assert.deepEqual(contacts.body.data, [], 'no contact was created for a refused send');
    });

    it('closes 24 hours after the customer’s last message', async () => {
      const received = await inbound(newCustomer());
      server.clock.advance(23 * HOUR + 59 * MINUTE);
      assert.equal((await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Still open' } })).status, 201);
      server.clock.advance(2 * MINUTE);
      assertError(await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Too late' } }), 409, 'window_closed');
    });
  });

  describe('templates', () => {
    const templates: Record<string, { id: string; provider_template_id: string }> = {};
    before(async () => {
      const define = async (name: string, category: string, text: string, examples: string[], approve: boolean) => {
        templates[name] = await defineTemplate(server, key, line, { name, category, text, examples, approve });
      };
      await define('shipping_notice', 'utility', 'Hi {{1}}, order {{2}} has shipped.', ['Ana', 'A-1'], true);
      await define('spring_sale', 'marketing', 'Spring sale: {{1}} off everything.', ['20%'], true);
      await define('under_review', 'utility', 'Hello {{1}}.', ['Ana'], false);
    });

    it('opens a conversation outside the window, creating the contact', async () => {
      const customer = newCustomer();
      const refused = await send({ to: `+${customer}`, type: 'text', text: { body: 'Free-form' } });
      assertError(refused, 409, 'window_closed');
      assert.deepEqual(refused.body.error.templates.map((template: { name: string }) => template.name).sort(), ['shipping_notice', 'spring_sale']);
      const response = await send({ to: `+${customer}`, type: 'template', template: { name: 'shipping_notice', language: 'en_US', body: ['Ana', 'A-1'] } });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.template.id, templates.shipping_notice!.id);
      assert.match(response.body.contact_id, /^ct_/);
      await settle(server);
      const sent = await getMessage(response.body.id);
      assert.equal(sent.status, 'read');
      assert.equal((await server.app.sandbox!.state.findMessage(sent.provider_message_id))?.templateCategory, 'utility');
    });

    it('refuses a template that is not approved, or with the wrong parameters, before the provider', async () => {
      const customer = `+${newCustomer()}`;
      const pending = await send({ to: customer, type: 'template', template: { name: 'under_review', language: 'en_US', body: ['Ana'] } });
      assertError(pending, 409, 'template_not_approved');
      const short = await send({ to: customer, type: 'template', template: { name: 'shipping_notice', language: 'en_US', body: ['Ana'] } });
      assertError(short, 400, 'template_parameters_mismatch');
      assert.equal(short.body.error.param, '/template/body');
      const unknown = await send({ to: customer, type: 'template', template: { name: 'no_such_template', language: 'en_US' } });
      assertError(unknown, 404, 'resource_not_found');
      const contacts = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(customer)}`, { token: key });
      assert.deepEqual(contacts.body.data, [], 'a refused send creates no contact');
    });

    it('refuses a marketing template to a contact who opted out, and still sends a utility one', async () => {
      const received = await inbound(newCustomer());
      const optOut = await server.request('POST', `/v1/contacts/${received.contact_id}/consent`, {
        token: key,
        body: { status: 'opted_out', source: 'keyword' },
      });
      assert.equal(optOut.status, 200, optOut.text);
      const marketing = await send({ contact_id: received.contact_id, type: 'template', template: { name: 'spring_sale', language: 'en_US', body: ['20%'] } });
      assertError(marketing, 409, 'contact_opted_out');
      const utility = await send({ contact_id: received.contact_id, type: 'template', template: { id: templates.shipping_notice!.id, body: ['Ana', 'A-2'] } });
      assert.equal(utility.status, 201, utility.text);
    });
  });

  describe('idempotency', () => {
    it('requires a key, and a replay answers the same message without storing another', async () => {
      const received = await inbound(newCustomer());
      assertError(await send({ contact_id: received.contact_id, type: 'text', text: { body: 'No key' } }, { key: null }), 400, 'idempotency_key_required');
      const sameKey = idempotencyKey();
      const first = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Once' } }, { key: sameKey });
      const again = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Once' } }, { key: sameKey });
      assert.equal(first.status, 201);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.body.id, first.body.id);
      await settle(server);
      const page = await server.request('GET', `/v1/messages?conversation_id=${received.conversation_id}&direction=outbound`, { token: key });
      assert.equal(page.body.data.length, 1);
    });

    it('100 concurrent sends with distinct keys to one conversation: each stored once, each sent once', async () => {
      const customer = newCustomer();
      const received = await inbound(customer);
      const responses = await Promise.all(
        Array.from({ length: 100 }, (_, index) => send({ contact_id: received.contact_id, type: 'text', text: { body: `Message ${index}` } })),
      );
      assert.deepEqual([...new Set(responses.map((response) => response.status))], [201]);
      assert.equal(new Set(responses.map((response) => response.body.id)).size, 100);
      assert.equal(new Set(responses.map((response) => response.body.conversation_id)).size, 1);
      // Faster than the number's ceiling: some are throttled by the provider and retried by the queue.
      await settleWithRetries();
      const rows = await server.app.store.db
        .selectFrom('messages')
        .select(['status', 'provider_message_id'])
        .where('conversation_id', '=', received.conversation_id)
        .where('direction', '=', 'outbound')
        .execute();
      assert.equal(rows.length, 100);
      assert.equal(new Set(rows.map((row) => row.provider_message_id)).size, 100, 'one provider message per stored message');
      assert.ok(rows.every((row) => row.status === 'read'));
      assert.equal((await server.app.sandbox!.state.outboundTo(customer)).length, 100, 'the provider received each once');
    });
  });

  describe('provider failures after the message was stored', () => {
    it('a refusal ends the message failed with the provider’s reason, and a failed status', async () => {
      const received = await inbound(newCustomer());
      await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131009, details: 'Parameter value is not valid' } } });
      const response = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Refused' } });
      assert.equal(response.status, 201);
      await settle(server);
      const failed = await getMessage(response.body.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 131009);
      assert.equal(failed.provider_message_id, null);
      assert.deepEqual(
        deliveriesFor(failed.id)
          .filter((event) => event.type === 'message.status')
          .map((event) => event.data.object.status),
        ['queued', 'failed'],
      );
    });

    it('an outage is retried on the job’s schedule and the message goes out once', async () => {
      const received = await inbound(newCustomer());
      await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131000 } } });
      const response = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Retried' } });
      await settle(server);
      assert.equal((await getMessage(response.body.id)).status, 'queued', 'waiting for its retry');
      server.clock.advance(MINUTE);
      await settle(server);
      const sent = await getMessage(response.body.id);
      assert.equal(sent.status, 'read');
      assert.equal(deliveriesFor(sent.id).filter((event) => event.type === 'message.sent').length, 1);
    });

    it('an asynchronous failure from the provider ends the message failed', async () => {
      const received = await inbound(newCustomer());
      await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next_async: { code: 131026, details: 'Message undeliverable' } } });
      const response = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Undeliverable' } });
      await settle(server);
      const failed = await getMessage(response.body.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 131026);
      assert.ok(failed.provider_message_id, 'the provider had accepted it');
    });

    it('a status that overtakes the send’s answer is matched by our id, and the send is not repeated', async () => {
      const received = await inbound(newCustomer());
      const response = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Raced' } });
      const connection = (await server.app.services.connections.findServing(server.app.store.db, line.phone_number_id))!;
      await server.app.store.db.transaction().execute((trx) =>
        server.app.services.messages.applyStatus(trx, connection, {
          providerMessageId: 'wamid.overtaking',
          status: 'delivered',
          errors: [],
          callbackData: response.body.id,
        }),
      );
      await settle(server);
      const message = await getMessage(response.body.id);
      assert.equal(message.provider_message_id, 'wamid.overtaking');
      assert.equal(message.status, 'delivered', 'sent never regresses a delivered message');
      // Delivered implies sent: the step the report skipped is announced with it, once.
      assert.deepEqual(
        deliveriesFor(message.id)
          .filter((event) => event.type === 'message.status')
          .map((event) => event.data.object.status),
        ['queued', 'sent', 'delivered'],
      );
      assert.equal(deliveriesFor(message.id).filter((event) => event.type === 'message.sent').length, 1);
    });

    it('a send that timed out is retried only after the grace period, and not at all once a status shows it arrived', async (t) => {
      const slow = await startServerWithOwner(t, { env: { PROVIDER_TIMEOUT_MS: '200' } });
      const connection = await createConnection(slow.server, slow.owner);
      const from = newCustomer();
      await inboundRow(slow.server, connection, { from, text: 'hello' });
      await slow.server.request('POST', '/sandbox/control/behaviour', { body: { latency_ms: 1000 } });
      const response = await slow.server.request('POST', '/v1/messages', {
        token: slow.owner.token,
        headers: { 'idempotency-key': idempotencyKey() },
        body: { connection_id: connection.id, to: `+${from}`, type: 'text', text: { body: 'Slow provider' } },
      });
      assert.equal(response.status, 201, response.text);
      await slow.server.app.worker.drain();
      await slow.server.request('POST', '/sandbox/control/behaviour', { body: { latency_ms: 0 } });
      assert.equal((await slow.server.request('GET', `/v1/messages/${response.body.id}`, { token: slow.owner.token })).body.status, 'queued');
      // The slow answer did arrive at the sandbox: its status walk names our message.
      await settle(slow.server);
      slow.server.clock.advance(SEND_TIMEOUT_GRACE_MS + MINUTE);
      await settle(slow.server);
      const rows = await slow.server.app.store.db
        .selectFrom('messages')
        .select(['status', 'provider_message_id'])
        .where('id', '=', response.body.id)
        .executeTakeFirstOrThrow();
      assert.ok(rows.provider_message_id, 'learnt from the status');
      const sandboxSends = [...(await slow.server.app.sandbox!.state.outboundTo(from))];
      assert.equal(sandboxSends.length, 1, 'the provider received it once');
    });
  });

  describe('bad input', () => {
    let received: Message;
    before(async () => {
      received = await inbound(newCustomer());
    });
    const invalid = async (body: Record<string, unknown>, param: string, code = 'validation_failed', status = 400) => {
      const response = await send({ contact_id: received.contact_id, ...body });
      assertError(response, status, code);
      assert.equal(response.body.error.param, param, response.text);
    };

    it('refuses what the schema refuses, naming the field', async () => {
      await invalid({ type: 'text', text: { body: '' } }, '/text/body');
      await invalid({ type: 'text', text: { body: 'x'.repeat(4097) } }, '/text/body');
      await invalid({ type: 'text', text: { body: 'hi', bold: true } }, '/text/bold');
      await invalid({ type: 'fax', text: { body: 'hi' } }, '/type');
      await invalid({ type: 'location', location: { latitude: 91, longitude: 0 } }, '/location/latitude');
      await invalid({ type: 'image', image: { link: 'http://example.com/cat.jpg' } }, '/image/link');
      await invalid({ type: 'interactive', interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [] } } }, '/interactive/action/buttons');
    });

    it('refuses a body whose content does not match its type', async () => {
      await invalid({ type: 'text' }, '/text');
      await invalid({ type: 'text', text: { body: 'hi' }, image: { link: 'https://example.com/a.jpg' } }, '/image');
      await invalid({ type: 'image', image: { caption: 'no media' } }, '/image/media_id');
      await invalid({ type: 'image', image: { link: 'https://example.com/a.jpg', media_id: 'med_00000000000000000000000000' } }, '/image/link');
    });

    it('needs exactly one recipient, in E.164', async () => {
      const response = await send({ contact_id: undefined, to: '07700900123', type: 'text', text: { body: 'hi' } });
      assertError(response, 400, 'validation_failed');
      assert.equal(response.body.error.param, '/to');
      await invalid({ to: `+${newCustomer()}`, type: 'text', text: { body: 'hi' } }, '/to');
      const neither = await send({ type: 'text', text: { body: 'hi' } });
      assertError(neither, 400, 'validation_failed');
      assert.equal(neither.body.error.param, '/contact_id');
    });

    it('refuses a deleted contact, another organization’s contact, connection or media as not found', async () => {
      const stranger = await signUp(server);
      const theirs = await server.request('POST', '/v1/contacts', { token: stranger.token, body: { phone_number: `+${newCustomer()}` } });
      const foreign = await send({ contact_id: theirs.body.id, type: 'text', text: { body: 'hi' } });
      assertError(foreign, 404, 'resource_not_found');
      assert.equal(foreign.body.error.param, '/contact_id');
      const theirLine = await createConnection(server, stranger);
      const wrongLine = await send({ connection_id: theirLine.id, type: 'text', text: { body: 'hi' } });
      assertError(wrongLine, 404, 'resource_not_found');
      assert.equal(wrongLine.body.error.param, '/connection_id');
      await invalid({ type: 'image', image: { media_id: 'med_00000000000000000000000000' } }, '/image/media_id', 'resource_not_found', 404);
      const form = new FormData();
      form.append('file', new Blob([Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(400)])], { type: 'image/jpeg' }), 'theirs.jpg');
      const upload = await fetch(`${server.url}/v1/media`, { method: 'POST', headers: { authorization: `Bearer ${stranger.token}` }, body: form });
      const theirMedia = (await upload.json()) as { id: string };
      assert.equal(upload.status, 201, JSON.stringify(theirMedia));
      await invalid({ type: 'image', image: { media_id: theirMedia.id } }, '/image/media_id', 'resource_not_found', 404);
      const gone = await inbound(newCustomer());
      assert.equal((await server.request('DELETE', `/v1/contacts/${gone.contact_id}`, { token: key })).status, 200);
      const deleted = await send({ contact_id: gone.contact_id, type: 'text', text: { body: 'hi' } });
      assertError(deleted, 404, 'resource_not_found');
      assert.equal(deleted.body.error.param, '/contact_id');
    });

    it('refuses a reaction or a reply to a message of another conversation', async () => {
      const elsewhere = await inbound(newCustomer());
      await invalid({ type: 'reaction', reaction: { message_id: elsewhere.id, emoji: '👍' } }, '/reaction/message_id', 'reaction_target_invalid');
      await invalid({ type: 'text', text: { body: 'hi' }, reply_to: elsewhere.id }, '/reply_to', 'reaction_target_invalid');
      await invalid(
        { type: 'reaction', reaction: { message_id: 'msg_00000000000000000000000000', emoji: '👍' } },
        '/reaction/message_id',
        'resource_not_found',
        404,
      );
    });

    it('an organization key must name the connection; a connection key sends from its own', async () => {
      const missing = await server.request('POST', '/v1/messages', {
        token: key,
        headers: { 'idempotency-key': idempotencyKey() },
        body: { contact_id: received.contact_id, type: 'text', text: { body: 'hi' } },
      });
      assertError(missing, 400, 'validation_failed');
      assert.equal(missing.body.error.param, '/connection_id');
      const own = await server.request('POST', '/v1/messages', {
        token: connectionKey,
        headers: { 'idempotency-key': idempotencyKey() },
        body: { contact_id: received.contact_id, type: 'text', text: { body: 'hi' } },
      });
      assert.equal(own.status, 201, own.text);
      assert.equal(own.body.connection_id, line.id);
      assertError(await send({ type: 'text', text: { body: 'hi' } }, { token: readOnlyKey }), 403, 'scope_missing');
    });
  });

  describe('read receipts and typing', () => {
    it('marks a customer’s message read at the provider, and shows typing', async () => {
      const received = await inbound(newCustomer());
      const read = await server.request('POST', `/v1/messages/${received.id}/read`, { token: key });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.status, 'read');
      const typing = await server.request('POST', `/v1/messages/${received.id}/typing`, { token: key });
      assert.equal(typing.status, 200, typing.text);
      assert.equal(typing.body.status, 'read');
    });

    it('refuses an outbound message and another organization’s', async () => {
      const received = await inbound(newCustomer());
      const sent = await send({ contact_id: received.contact_id, type: 'text', text: { body: 'Ours' } });
      assertError(await server.request('POST', `/v1/messages/${sent.body.id}/read`, { token: key }), 409, 'invalid_state');
      const stranger = await signUp(server);
      assertError(await server.request('POST', `/v1/messages/${received.id}/typing`, { token: stranger.token }), 404, 'resource_not_found');
    });
  });

  describe('test connections and key modes', () => {
    it('a live organization key sends on a test connection, end to end through the sandbox, and lists and reads what it sent', async () => {
      // Connected with the live key itself: it may create a test connection as well as use one.
      const testLine = await createConnection(server, { token: key }, { test: true, name: 'Test line' });
      assert.equal(testLine.test, true);
      const from = newCustomer();
      const received = await inbound(from, testLine);
      assert.equal(received.connection_id, testLine.id, 'the live key reads the inbound message of the test connection');
      const response = await send({ connection_id: testLine.id, contact_id: received.contact_id, type: 'text', text: { body: 'Sent with a live key' } });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.connection_id, testLine.id);
      assert.equal(response.body.conversation_id, received.conversation_id);
      await settle(server);
      const sent = await getMessage(response.body.id);
      assert.equal(sent.status, 'read');
      assert.equal((await server.app.sandbox!.state.findMessage(sent.provider_message_id))?.waId, from, 'the sandbox number of the test connection sent it');
      assert.deepEqual(
        deliveriesFor(sent.id)
          .filter((event) => event.type === 'message.status')
          .map((event) => event.data.object.status),
        ['queued', 'sent', 'delivered', 'read'],
      );
      const listed = await server.request('GET', `/v1/messages?conversation_id=${received.conversation_id}&order=asc`, { token: key });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.data.map((message: Message) => message.id),
        [received.id, sent.id],
      );
      const byConnection = await server.request('GET', `/v1/messages?connection_id=${testLine.id}`, { token: key });
      assert.deepEqual(
        byConnection.body.data.map((message: Message) => message.id),
        [sent.id, received.id],
      );
      assert.equal((await server.request('GET', `/v1/conversations/${received.conversation_id}`, { token: key })).status, 200);
      const read = await server.request('POST', `/v1/messages/${received.id}/read`, { token: key });
      assert.equal(read.status, 200, read.text);
    });

    it('a test key is refused on a live connection with test_key_on_live_connection, and nothing is stored', async () => {
      // Earlier tests moved the clock past the sign-up's dashboard token: log in afresh to create the key.
      const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const testKey = (await createKey(server, login.body.token, { kind: 'organization', mode: 'test' })).key;
      const received = await inbound(newCustomer());
      const refused = assertError(
        await send({ contact_id: received.contact_id, type: 'text', text: { body: 'From a test key' } }, { token: testKey }),
        403,
        'test_key_on_live_connection',
      );
      assert.equal(refused.type, 'permission_error');
      assert.equal(refused.param, '/connection_id');
      assertError(await server.request('GET', `/v1/connections/${line.id}`, { token: testKey }), 403, 'test_key_on_live_connection');
      const listed = await server.request('GET', `/v1/messages?conversation_id=${received.conversation_id}`, { token: key });
      assert.deepEqual(
        listed.body.data.map((message: Message) => message.id),
        [received.id],
      );
    });
  });
});
