import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOUR, ManualClock } from '../../lib/clock.ts';
import { assertGraphError, sandboxStore, setup, statusesOf, USER } from './harness.test.ts';
import { escapeNonAscii } from './index.ts';
import { createWebhookSender } from './webhooks.ts';

describe('the sandbox provider: connecting', () => {
  it('exchanging any code creates a number the token can read, found the provider way too', async (t) => {
    const { call, connect } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect();
    assert.match(phoneNumberId, /^\d{15}$/);

    const debug = await call('GET', `/graph/v24.0/debug_token?input_token=${token}`, undefined, token);
    assert.deepEqual(debug.body.data.granular_scopes[0].target_ids, [wabaId]);
    const list = await call('GET', `/graph/v24.0/${wabaId}/phone_numbers`, undefined, token);
    assert.equal(list.body.data[0].id, phoneNumberId);

    const node = await call('GET', `/graph/v24.0/${phoneNumberId}`, undefined, token);
    assert.equal(node.status, 200);
    assert.equal(node.headers['facebook-api-version'], 'v24.0');
    assert.equal(node.body.id, phoneNumberId);
    assert.equal(node.body.quality_rating, 'GREEN');
    assert.deepEqual(node.body.throughput, { level: 'STANDARD' });
    assert.equal(typeof node.body.messaging_limit_tier, 'string');
    assert.match(node.body.display_phone_number, /^\+1 631-555-01\d\d$/);

    const narrowed = await call('GET', `/graph/v24.0/${phoneNumberId}?fields=verified_name`, undefined, token);
    assert.deepEqual(Object.keys(narrowed.body).sort(), ['id', 'verified_name']);
  });

  it('a wrong client_secret is refused with code 1', async (t) => {
    const { call } = await setup(t);
    const response = await call('GET', '/graph/v24.0/oauth/access_token?client_id=app&client_secret=nope&code=c');
    assertGraphError(response, 400, 1);
  });
});

describe('the sandbox provider: sending', () => {
  it('sending text inside the window returns the contact and a wamid', async (t) => {
    const { connect, inbound, sendText } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const response = await sendText(token, phoneNumberId, `+${USER}`);
    assert.equal(response.status, 200);
    assert.equal(response.headers['facebook-api-version'], 'v24.0');
    assert.equal(response.body.messaging_product, 'whatsapp');
    assert.deepEqual(response.body.contacts, [{ input: `+${USER}`, wa_id: USER }]);
    assert.match(response.body.messages[0].id, /^wamid\./);
  });

  it('a missing or unknown token is refused with 190 and HTTP 401 in the Graph envelope', async (t) => {
    const { connect, sendText } = await setup(t);
    const { phoneNumberId } = await connect();
    assertGraphError(await sendText('not-a-token', phoneNumberId), 401, 190);
    const { call } = await setup(t);
    assertGraphError(await call('POST', `/graph/v24.0/${phoneNumberId}/messages`, { messaging_product: 'whatsapp' }), 401, 190);
  });

  it("an unknown number, or another account's, is refused with code 100 subcode 33", async (t) => {
    const { connect, sendText } = await setup(t);
    const first = await connect();
    const second = await connect();
    const unknown = await sendText(first.token, '999999999999999');
    assertGraphError(unknown, 400, 100);
    assert.equal(unknown.body.error.error_subcode, 33);
    assertGraphError(await sendText(first.token, second.phoneNumberId), 400, 100);
  });

  it('outside the 24-hour window text is refused with 131047 but a template is accepted', async (t) => {
    const { connect, sendText, call } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    assertGraphError(await sendText(token, phoneNumberId), 400, 131047);
    const template = await call(
      'POST',
      `/graph/v24.0/${phoneNumberId}/messages`,
      { messaging_product: 'whatsapp', to: USER, type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } },
      token,
    );
    assert.equal(template.status, 200);
    assert.match(template.body.messages[0].id, /^wamid\./);
  });

  it('an inbound message opens the window for 24 hours', async (t) => {
    const { connect, sendText, inbound, clock } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    clock.advance(23 * HOUR);
    assert.equal((await sendText(token, phoneNumberId)).status, 200);
    clock.advance(HOUR);
    assertGraphError(await sendText(token, phoneNumberId), 400, 131047);
  });

  it('payload mistakes get the provider codes: wrong product, id and link together, missing type object', async (t) => {
    const { connect, inbound, call } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const send = (body: unknown) => call('POST', `/graph/v24.0/${phoneNumberId}/messages`, body, token);
    assertGraphError(await send({ messaging_product: 'sms', to: USER, text: { body: 'x' } }), 400, 100);
    assertGraphError(await send({ messaging_product: 'whatsapp', to: USER, type: 'image', image: { id: '1', link: 'https://x.test/a.png' } }), 400, 131009);
    assertGraphError(await send({ messaging_product: 'whatsapp', to: USER, type: 'reaction' }), 400, 131008);
    const image = await send({ messaging_product: 'whatsapp', to: USER, type: 'image', image: { link: 'https://x.test/a.png', caption: 'a' } });
    assert.equal(image.status, 200);
    const reaction = await send({
      messaging_product: 'whatsapp',
      to: USER,
      type: 'reaction',
      reaction: { message_id: image.body.messages[0].id, emoji: '👍' },
    });
    assert.equal(reaction.status, 200);
  });

  it('marking an inbound message read, with or without a typing indicator, succeeds; an unknown id does not', async (t) => {
    const { connect, inbound, call } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    const received = await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const read = (body: Record<string, unknown>) =>
      call('POST', `/graph/v24.0/${phoneNumberId}/messages`, { messaging_product: 'whatsapp', status: 'read', ...body }, token);
    assert.deepEqual((await read({ message_id: received.body.message_id })).body, { success: true });
    assert.deepEqual((await read({ message_id: received.body.message_id, typing_indicator: { type: 'text' } })).body, { success: true });
    assertGraphError(await read({ message_id: 'wamid.unknown' }), 400, 100);
  });
});

describe('the sandbox provider: webhooks', () => {
  it('an accepted message walks through sent, delivered and read, each webhook signed over its bytes', async (t) => {
    const { connect, inbound, sendText, receiver, sandbox } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const sent = await sendText(token, phoneNumberId);
    await sandbox.idle();

    const statuses = statusesOf(receiver.received);
    assert.deepEqual(
      statuses.map((status) => status.status),
      ['sent', 'delivered', 'read'],
    );
    assert.ok(statuses.every((status) => status.id === sent.body.messages[0].id));
    assert.ok(receiver.received.every((webhook) => webhook.signatureValid));
    const envelope = receiver.received[1]!.body;
    assert.equal(envelope.object, 'whatsapp_business_account');
    assert.equal(envelope.entry[0].id, wabaId);
    assert.equal(envelope.entry[0].changes[0].field, 'messages');
    assert.equal(envelope.entry[0].changes[0].value.metadata.phone_number_id, phoneNumberId);
    const first = envelope.entry[0].changes[0].value.statuses[0];
    assert.equal(first.recipient_id, USER);
    assert.match(first.timestamp, /^\d+$/);
    assert.equal(first.pricing.type, 'free_customer_service');
  });

  it('webhook bytes carry non-ASCII as \\uXXXX escapes and still verify', async (t) => {
    const { connect, inbound, receiver } = await setup(t);
    const { phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'olá 👋', name: 'Zoë' });
    const [webhook] = receiver.received;
    assert.ok(webhook!.signatureValid);
    assert.ok(
      webhook!.raw.every((byte) => byte < 0x80),
      'only ASCII bytes on the wire',
    );
    assert.match(webhook!.raw.toString(), /ol\\u00e1 \\ud83d\\udc4b/);
    assert.equal(webhook!.body.entry[0].changes[0].value.messages[0].text.body, 'olá 👋');
    assert.equal(escapeNonAscii(JSON.stringify('é')), '"\\u00e9"');
  });

  it('control statuses are forwarded as given: out of order, duplicated, failed with errors', async (t) => {
    const { connect, call, receiver } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    const template = await call(
      'POST',
      `/graph/v24.0/${phoneNumberId}/messages`,
      { messaging_product: 'whatsapp', to: USER, type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } },
      token,
    );
    const messageId = template.body.messages[0].id;
    for (const status of ['read', 'sent', 'sent', 'delivered']) {
      assert.equal((await call('POST', '/control/status', { message_id: messageId, status })).status, 200);
    }
    await call('POST', '/control/status', { message_id: messageId, status: 'failed', error: { code: 131026 } });
    const statuses = statusesOf(receiver.received);
    assert.deepEqual(
      statuses.map((status) => status.status),
      ['read', 'sent', 'sent', 'delivered', 'failed'],
    );
    assert.equal(statuses[4]!.errors![0]!.code, 131026);
    assert.ok(receiver.received.every((webhook) => webhook.signatureValid));
    assert.equal((await call('POST', '/control/status', { message_id: 'wamid.nope', status: 'sent' })).status, 404);
  });

  it('inbound messages arrive in the provider shapes: image, location, button reply, reaction', async (t) => {
    const { connect, inbound, receiver } = await setup(t);
    const { phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'image', image: { caption: 'look' } });
    await inbound({ phone_number_id: phoneNumberId, type: 'location', location: { latitude: 52.5, longitude: 13.4, name: 'Berlin' } });
    await inbound({ phone_number_id: phoneNumberId, type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } } });
    await inbound({ phone_number_id: phoneNumberId, type: 'reaction', reaction: { message_id: 'wamid.x', emoji: '❤️' } });
    const messages = receiver.received.map((webhook) => webhook.body.entry[0].changes[0].value.messages[0]);
    assert.deepEqual(
      messages.map((message) => message.type),
      ['image', 'location', 'interactive', 'reaction'],
    );
    assert.match(messages[0].image.id, /^\d+$/);
    assert.equal(messages[0].image.mime_type, 'image/jpeg');
    assert.match(messages[0].image.sha256, /^[0-9a-f]{64}$/);
    assert.equal(messages[0].image.caption, 'look');
    assert.equal(messages[1].location.latitude, 52.5);
    assert.equal(messages[2].interactive.button_reply.id, 'yes');
    assert.equal(messages[3].reaction.emoji, '❤️');
    assert.ok(messages.every((message) => message.from === USER && /^wamid\./.test(message.id) && /^\d+$/.test(message.timestamp)));
    const contacts = receiver.received[0]!.body.entry[0].changes[0].value.contacts;
    assert.equal(contacts[0].wa_id, USER);
  });

  it('an unsupported inbound type arrives as unsupported with error 131051', async (t) => {
    const { connect, inbound, receiver } = await setup(t);
    const { phoneNumberId } = await connect();
    const response = await inbound({ phone_number_id: phoneNumberId, type: 'poll_creation' });
    assert.equal(response.status, 200);
    assert.equal(response.body.delivery.status, 200);
    const message = receiver.received[0]!.body.entry[0].changes[0].value.messages[0];
    assert.equal(message.type, 'unsupported');
    assert.deepEqual(message.unsupported, { type: 'poll_creation' });
    assert.equal(message.errors[0].code, 131051);
    assert.equal(message.errors[0].error_data.details, 'Message type is currently not supported.');
  });

  it('control requests are validated', async (t) => {
    const { connect, inbound, call } = await setup(t);
    const { phoneNumberId } = await connect();
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'text' })).status, 400);
    assert.equal((await inbound({ phone_number_id: 'nope', type: 'text', text: 'x' })).status, 404);
    const bad = await call('POST', '/control/behaviour', { fail_next: { code: 'x' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'validation_failed');
  });

  it('the delivery log keeps only the latest deliveries, so a long run stays bounded', async (t) => {
    const store = await sandboxStore(t);
    const sender = createWebhookSender({ store, appSecret: 'secret', clock: new ManualClock(), logSize: 10 });
    for (let index = 0; index < 25; index += 1) await sender.send({ index }, { skip: 'recorded only' });
    const deliveries = await sender.deliveries();
    assert.equal(deliveries.length, 10);
    assert.deepEqual(
      deliveries.map((delivery) => JSON.parse(delivery.body).index),
      [15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
    );
    assert.equal(deliveries.at(-1)!.error, 'recorded only');
    const stored = await store.db
      .selectFrom('sandbox_webhooks')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    assert.ok(Number(stored.count) <= 11, `the table is trimmed too (${stored.count} rows)`);
  });

  it('the subscription handshake echoes the challenge', async (t) => {
    const { sandbox } = await setup(t);
    assert.equal(await sandbox.verifyWebhook(), true);
  });
});

describe('the sandbox provider: behaviour', () => {
  it('fail_next makes exactly the next Graph call fail with the chosen code and status', async (t) => {
    const { connect, inbound, sendText, call } = await setup(t, { autoStatus: false });
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });

    const set = await call('POST', '/control/behaviour', { fail_next: { code: 130429 } });
    assert.equal(set.body.fail_next.code, 130429);
    assertGraphError(await sendText(token, phoneNumberId), 400, 130429);
    assert.equal((await sendText(token, phoneNumberId)).status, 200);

    await call('POST', '/control/behaviour', { fail_next: { code: 131000, http_status: 503 } });
    assertGraphError(await sendText(token, phoneNumberId), 503, 131000);
    assert.equal((await sendText(token, phoneNumberId)).status, 200);
  });

  it('auto_status false stops the walk; latency_ms delays Graph answers', async (t) => {
    const { connect, inbound, sendText, call, receiver, sandbox } = await setup(t);
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    await call('POST', '/control/behaviour', { auto_status: false, latency_ms: 150 });
    const started = performance.now();
    assert.equal((await sendText(token, phoneNumberId)).status, 200);
    assert.ok(performance.now() - started >= 140);
    await sandbox.idle();
    assert.equal(statusesOf(receiver.received).length, 0);
  });
});
