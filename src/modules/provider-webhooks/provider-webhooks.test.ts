import assert from 'node:assert/strict';
import { providerWebhookProcess } from '../../jobs/catalog.ts';
import { createHmac } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { assertError, createConnection, inbound, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

const APP_SECRET = 'provider-webhooks-test-secret';
const VERIFY_TOKEN = 'verify-me-please';
const sign = (body: string, secret = APP_SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('provider webhooks', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string; waba_id: string; display_phone_number: string };
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite, { env: { PROVIDER_APP_SECRET: APP_SECRET, PROVIDER_VERIFY_TOKEN: VERIFY_TOKEN } }));
    connection = await createConnection(server, owner);
  });

  /** `signature: null` sends none. */
  const postWebhook = (body: string, signature: string | null = sign(body)) =>
    server.request('POST', '/provider/webhook', {
      rawBody: body,
      headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'x-hub-signature-256': signature }) },
    });
  const messageByProviderId = (id: string) => server.app.store.db.selectFrom('messages').selectAll().where('provider_message_id', '=', id).executeTakeFirst();
  const eventsOfType = async (type: string) =>
    (
      await server.app.store.db
        .selectFrom('events')
        .selectAll()
        .where('organization_id', '=', owner.organizationId)
        .where('type', '=', type)
        .orderBy('id')
        .execute()
    ).map((row) => JSON.parse(row.data) as Record<string, any>);
  const countWebhooks = async () => (await server.app.store.db.selectFrom('provider_webhooks').select('id').execute()).length;
  const envelope = (value: Record<string, unknown>, field = 'messages') =>
    JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: connection.waba_id,
          changes: [
            {
              field,
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: connection.display_phone_number.replace(/\D/g, ''), phone_number_id: connection.phone_number_id },
                ...value,
              },
            },
          ],
        },
      ],
    });

  describe('the handshake', () => {
    it('echoes the challenge to the right verify token', async () => {
      const response = await server.request('GET', `/provider/webhook?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`);
      assert.equal(response.status, 200);
      assert.equal(response.text, '1158201444');
    });

    it('refuses a wrong token or mode', async () => {
      assertError(await server.request('GET', '/provider/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1'), 401, 'signature_invalid');
      assertError(
        await server.request('GET', `/provider/webhook?hub.mode=unsubscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`),
        401,
        'signature_invalid',
      );
    });
  });

  describe('inbound messages', () => {
    it('a first message creates the contact and the conversation, stores the message and emits message.received', async () => {
      const stored = await inbound(server, connection, { from: '447700900123', type: 'text', text: 'Hello there', name: 'Ada' });
      assert.equal(stored.direction, 'inbound');
      assert.equal(stored.connection_id, connection.id);
      const [message] = (await eventsOfType('message.received')).filter((m) => m.provider_message_id === stored.provider_message_id);
      assert.ok(message);
      assert.equal(message.type, 'text');
      assert.deepEqual(message.text, { body: 'Hello there' });
      assert.equal(message.status, 'received');
      assert.equal(message.imported, false);
      const contact = (await eventsOfType('contact.created')).find((c) => c.id === message.contact_id);
      assert.equal(contact?.phone_number, '+447700900123');
      assert.equal(contact?.profile_name, 'Ada');
      const conversation = (await eventsOfType('conversation.created')).find((c) => c.id === message.conversation_id);
      assert.equal(conversation?.contact_id, message.contact_id);
      assert.equal(conversation?.state, 'open');
    });

    it('the next message from the same customer joins the same contact and conversation', async () => {
      const a = await inbound(server, connection, { from: '447700900200', type: 'text', text: 'one' });
      const b = await inbound(server, connection, { from: '447700900200', type: 'text', text: 'two', context: { message_id: a.provider_message_id } });
      assert.equal(a.contact_id, b.contact_id);
      assert.equal(a.conversation_id, b.conversation_id);
      assert.equal((await eventsOfType('contact.created')).filter((c) => c.id === a.contact_id).length, 1);
      const reply = (await eventsOfType('message.received')).find((m) => m.provider_message_id === b.provider_message_id);
      assert.equal(reply!.context.reply_to, a.id);
    });

    it('media, location and interactive replies are stored in their own shapes', async () => {
      const location = await inbound(server, connection, {
        from: '447700900300',
        type: 'location',
        location: { latitude: 51.5, longitude: -0.12, name: 'Office' },
      });
      const received = (await eventsOfType('message.received')).find((m) => m.provider_message_id === location.provider_message_id);
      assert.equal(received!.type, 'location');
      assert.equal(received!.location.latitude, 51.5);
      const button = await inbound(server, connection, {
        from: '447700900300',
        type: 'interactive',
        interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } },
      });
      const reply = (await eventsOfType('message.received')).find((m) => m.provider_message_id === button.provider_message_id);
      assert.equal(reply!.interactive.button_reply.id, 'yes');
    });

    it('an unknown message type is stored as unsupported, not dropped', async () => {
      const poll = await inbound(server, connection, { from: '447700900400', type: 'poll_creation' });
      const received = (await eventsOfType('message.received')).find((m) => m.provider_message_id === poll.provider_message_id);
      assert.equal(received!.type, 'unsupported');
      assert.equal(received!.unsupported.original_type, 'poll_creation');
    });

    it('unknown fields inside a message are kept', async () => {
      const body = envelope({
        contacts: [{ profile: { name: 'Grace' }, wa_id: '447700900500' }],
        messages: [{ from: '447700900500', id: 'wamid.unknown-fields', timestamp: '1780000000', type: 'text', text: { body: 'hi', shiny_new_field: 42 } }],
      });
      assert.equal((await postWebhook(body)).status, 200);
      await server.app.worker.drain();
      const received = (await eventsOfType('message.received')).find((m) => m.provider_message_id === 'wamid.unknown-fields');
      assert.equal(received!.text.shiny_new_field, 42);
    });
  });

  describe('delivery statuses', () => {
    /** Files an outbound message as if sent, without the provider, next to a customer's message. */
    async function outboundMessage(providerMessageId: string, from: string): Promise<void> {
      const inboundRow = await inbound(server, connection, { from, type: 'text', text: 'hi' });
      const now = new Date().toISOString();
      await server.app.store.db
        .insertInto('messages')
        .values({
          ...inboundRow,
          id: `msg_${providerMessageId.replace(/\W/g, '').toUpperCase().padEnd(26, '0').slice(0, 26)}`,
          direction: 'outbound',
          status: 'queued',
          provider_message_id: providerMessageId,
          content: JSON.stringify({ body: { body: 'hello' }, referral: null }),
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    const status = (id: string, name: string, nonce: number, extra: Record<string, unknown> = {}) =>
      // Trailing spaces make each webhook's bytes distinct, as separate deliveries of the provider are.
      envelope({ statuses: [{ id, status: name, timestamp: '1780000000', recipient_id: '447700901000', ...extra }] }) + ' '.repeat(nonce);
    const moves = async (id: string) => (await eventsOfType('message.status')).filter((m) => m.provider_message_id === id).map((m) => m.status as string);

    it('move an outbound message forward only, one message.status per step, whatever the order or repeats', async () => {
      await outboundMessage('wamid.outbound-1', '447700901000');
      for (const [i, name] of ['delivered', 'sent', 'delivered', 'read', 'delivered', 'read'].entries()) {
        assert.equal((await postWebhook(status('wamid.outbound-1', name, i))).status, 200);
        await server.app.worker.drain();
      }
      // Stored queued: the first report (delivered) announces the sent it skipped too.
      assert.deepEqual(await moves('wamid.outbound-1'), ['sent', 'delivered', 'read']);
      assert.equal((await messageByProviderId('wamid.outbound-1'))!.status, 'read');
      await postWebhook(status('wamid.outbound-1', 'failed', 9, { errors: [{ code: 131026, title: 'Message undeliverable' }] }));
      await server.app.worker.drain();
      assert.equal((await messageByProviderId('wamid.outbound-1'))!.status, 'read', 'a read message cannot fail');
    });

    it('applied concurrently, statuses still only move forward', async () => {
      await outboundMessage('wamid.outbound-2', '447700901001');
      for (const [i, name] of ['read', 'sent', 'delivered', 'sent', 'delivered', 'read', 'sent', 'delivered'].entries()) {
        assert.equal((await postWebhook(status('wamid.outbound-2', name, i))).status, 200);
      }
      await server.app.worker.drain();
      const seen = await moves('wamid.outbound-2');
      const rank = { sent: 1, delivered: 2, read: 3 } as Record<string, number>;
      assert.ok(
        seen.every((name, i) => i === 0 || rank[name]! > rank[seen[i - 1]!]!),
        `events went backwards: ${seen.join(', ')}`,
      );
      assert.deepEqual(seen, ['sent', 'delivered', 'read'], 'each step once, the skipped ones included, whatever order the reports were applied in');
      assert.equal((await messageByProviderId('wamid.outbound-2'))!.status, 'read');
    });

    it('a failure is recorded with the provider reason', async () => {
      await outboundMessage('wamid.outbound-3', '447700901002');
      await postWebhook(status('wamid.outbound-3', 'sent', 0));
      await postWebhook(
        status('wamid.outbound-3', 'failed', 1, { errors: [{ code: 131026, title: 'Message undeliverable', error_data: { details: 'not on WhatsApp' } }] }),
      );
      await server.app.worker.drain();
      const failed = (await eventsOfType('message.status')).find((m) => m.provider_message_id === 'wamid.outbound-3' && m.status === 'failed');
      assert.equal(failed!.error.code, 131026);
      assert.equal(failed!.error.title, 'Message undeliverable');
    });
  });

  describe('what is refused, and what is accepted but ignored', () => {
    it('a wrong or missing signature is 401 and nothing is stored', async () => {
      const before = await countWebhooks();
      const body = envelope({ messages: [] });
      assertError(await postWebhook(body, sign(body, 'another-secret')), 401, 'signature_invalid');
      assertError(await postWebhook(body, null), 401, 'signature_invalid');
      assertError(await postWebhook(body, 'sha256=zz'), 401, 'signature_invalid');
      assertError(await postWebhook(body + ' ', sign(body)), 401, 'signature_invalid');
      assert.equal(await countWebhooks(), before);
    });

    it('truncated JSON with a valid signature is malformed_json and nothing is stored', async () => {
      const before = await countWebhooks();
      const body = envelope({ messages: [] }).slice(0, 40);
      assertError(await postWebhook(body), 400, 'malformed_json');
      assert.equal(await countWebhooks(), before);
    });

    it("the provider's retry of the same bytes is stored and processed once", async () => {
      const body = envelope({
        contacts: [{ profile: { name: 'Retry' }, wa_id: '447700900600' }],
        messages: [{ from: '447700900600', id: 'wamid.retried', timestamp: '1780000000', type: 'text', text: { body: 'once' } }],
      });
      const before = await countWebhooks();
      assert.equal((await postWebhook(body)).status, 200);
      assert.equal((await postWebhook(body)).status, 200);
      assert.equal(await countWebhooks(), before + 1);
      await server.app.worker.drain();
      assert.equal((await eventsOfType('message.received')).filter((m) => m.provider_message_id === 'wamid.retried').length, 1);
    });

    it('the same message in two different webhooks is stored once', async () => {
      const message = { from: '447700900700', id: 'wamid.rebatched', timestamp: '1780000000', type: 'text', text: { body: 'again' } };
      assert.equal((await postWebhook(envelope({ messages: [message] }))).status, 200);
      assert.equal((await postWebhook(envelope({ messages: [message], contacts: [{ profile: { name: 'X' }, wa_id: '447700900700' }] }))).status, 200);
      await server.app.worker.drain();
      const rows = await server.app.store.db.selectFrom('messages').select('id').where('provider_message_id', '=', 'wamid.rebatched').execute();
      assert.equal(rows.length, 1);
    });

    it('a webhook for a number no connection serves is accepted and skipped', async () => {
      const body = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '1',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: '15550000000', phone_number_id: '999999999' },
                  messages: [{ from: '447700900800', id: 'wamid.stranger', timestamp: '1780000000', type: 'text', text: { body: 'hi' } }],
                },
              },
            ],
          },
        ],
      });
      assert.equal((await postWebhook(body)).status, 200);
      await server.app.worker.drain();
      assert.equal(await messageByProviderId('wamid.stranger'), undefined);
      const row = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('body', '=', body).executeTakeFirstOrThrow();
      assert.ok(row.processed_at, 'processed, not retried forever');
    });

    it('a status for a message this service did not send is accepted and skipped', async () => {
      const body = envelope({ statuses: [{ id: 'wamid.not-ours', status: 'delivered', timestamp: '1780000000', recipient_id: '447700900123' }] });
      assert.equal((await postWebhook(body)).status, 200);
      await server.app.worker.drain();
      const row = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('body', '=', body).executeTakeFirstOrThrow();
      assert.ok(row.processed_at);
      assert.equal(row.error, null);
      assert.equal((await eventsOfType('message.status')).filter((m) => m.provider_message_id === 'wamid.not-ours').length, 0);
    });

    it('a body that is JSON but not an envelope is kept, marked, and never retried', async () => {
      const body = JSON.stringify({ hello: 'world' });
      assert.equal((await postWebhook(body)).status, 200);
      await server.app.worker.drain();
      const row = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('body', '=', body).executeTakeFirstOrThrow();
      assert.ok(row.processed_at);
      assert.ok(row.error);
    });

    it('a webhook that needs only the store is applied before it is answered, in one commit and with no job', async () => {
      const body = envelope({ messages: [{ from: '447700900900', id: 'wamid.at-once', timestamp: '1780000000', type: 'text', text: { body: 'now' } }] });
      assert.equal((await postWebhook(body)).status, 200);
      assert.ok(await messageByProviderId('wamid.at-once'), 'the message is filed by the time the provider hears 200');
      const row = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('body', '=', body).executeTakeFirstOrThrow();
      assert.ok(row.processed_at);
      assert.equal(row.updates, 1);
      const jobs = await server.app.store.db.selectFrom('jobs').select('payload').where('name', '=', providerWebhookProcess.name).execute();
      assert.ok(!jobs.some((job) => job.payload.includes(row.id)), 'no job was queued for it');
    });

    it('a webhook that needs the provider (a number’s quality) is answered first, and applied by the worker', async () => {
      const body = envelope(
        { display_phone_number: connection.display_phone_number.replace(/\D/g, ''), event: 'DOWNGRADE', current_limit: 'TIER_1K' },
        'phone_number_quality_update',
      );
      assert.equal((await postWebhook(body)).status, 200);
      const row = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('body', '=', body).executeTakeFirstOrThrow();
      assert.equal(row.processed_at, null, 'answered before it is processed');
      const jobs = await server.app.store.db.selectFrom('jobs').select('payload').where('name', '=', providerWebhookProcess.name).execute();
      assert.ok(
        jobs.some((job) => job.payload.includes(row.id)),
        'its processing is queued',
      );
      await server.app.worker.drain();
      const processed = await server.app.store.db.selectFrom('provider_webhooks').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      assert.ok(processed.processed_at);
    });
  });
});
