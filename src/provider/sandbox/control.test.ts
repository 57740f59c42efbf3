import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY } from '../../lib/clock.ts';
import { changesOf, messagesOf, setup, statusesOf, USER, V } from './harness.test.ts';

describe('the sandbox control API: inbound messages of every type', () => {
  it('each type of §3.2 arrives as the provider shapes it', async (t) => {
    const { connect, inbound, receiver } = await setup(t);
    const { phoneNumberId } = await connect();
    const inputs: Record<string, unknown>[] = [
      { type: 'text', text: 'hello' },
      { type: 'image', image: { caption: 'pic' } },
      { type: 'video', video: {} },
      { type: 'audio', audio: { voice: true } },
      { type: 'document', document: { filename: 'a.pdf' } },
      { type: 'sticker', sticker: { animated: true } },
      { type: 'location', location: { latitude: 52.5, longitude: 13.4, name: 'Berlin', address: 'Mitte' } },
      { type: 'contacts', contacts: [{ name: { formatted_name: 'Ada Lovelace', first_name: 'Ada' }, phones: [{ phone: '+44 20', type: 'CELL' }] }] },
      { type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } } },
      { type: 'interactive', interactive: { type: 'list_reply', list_reply: { id: 'row-1', title: 'First', description: 'the first' } } },
      { type: 'button', button: { text: 'Stop promotions', payload: 'STOP' } },
      { type: 'reaction', reaction: { message_id: 'wamid.x', emoji: '👍' } },
      { type: 'reaction', reaction: { message_id: 'wamid.x' } },
      {
        type: 'order',
        order: { catalog_id: 'cat-1', text: 'please', product_items: [{ product_retailer_id: 'sku-1', quantity: 2, item_price: 9.5, currency: 'EUR' }] },
      },
      { type: 'system', system: { type: 'customer_changed_number', new_wa_id: '15557654321' } },
      { type: 'request_welcome' },
      { type: 'poll_creation' },
    ];
    for (const input of inputs) {
      const answer = await inbound({ phone_number_id: phoneNumberId, ...input });
      assert.equal(answer.status, 200, `${JSON.stringify(input)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.delivery.status, 200);
    }
    const messages = messagesOf(receiver.received);
    assert.deepEqual(
      messages.map((message) => message.type),
      [
        'text',
        'image',
        'video',
        'audio',
        'document',
        'sticker',
        'location',
        'contacts',
        'interactive',
        'interactive',
        'button',
        'reaction',
        'reaction',
        'order',
        'system',
        'request_welcome',
        'unsupported',
      ],
    );
    const [text, image, video, audio, document, sticker, location, contacts, button, list, quick, reaction, removal, order, system, welcome, unsupported] =
      messages;
    assert.deepEqual(text.text, { body: 'hello' });
    assert.equal(image.image.caption, 'pic');
    assert.equal(video.video.mime_type, 'video/mp4');
    assert.equal(audio.audio.voice, true);
    assert.equal(document.document.filename, 'a.pdf');
    assert.equal(sticker.sticker.animated, true);
    assert.deepEqual(location.location, { latitude: 52.5, longitude: 13.4, name: 'Berlin', address: 'Mitte' });
    assert.equal(contacts.contacts[0].name.formatted_name, 'Ada Lovelace');
    assert.deepEqual(button.interactive, { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } });
    assert.equal(list.interactive.list_reply.description, 'the first');
    assert.deepEqual(quick.button, { text: 'Stop promotions', payload: 'STOP' });
    assert.equal(reaction.reaction.emoji, '👍');
    assert.deepEqual(removal.reaction, { message_id: 'wamid.x' });
    assert.equal(order.order.product_items[0].quantity, 2);
    assert.deepEqual(system.system, { body: 'User changed their phone number.', type: 'customer_changed_number', wa_id: '15557654321' });
    assert.deepEqual(Object.keys(welcome).sort(), ['from', 'id', 'timestamp', 'type']);
    assert.deepEqual(unsupported.unsupported, { type: 'poll_creation' });
    assert.equal(unsupported.errors[0].code, 131051);
    for (const message of messages) {
      assert.equal(message.from, USER);
      assert.match(message.id, /^wamid\./);
      assert.match(message.timestamp, /^\d+$/);
    }
    const value = changesOf(receiver.received, 'messages')[0]!.value;
    assert.deepEqual(value.contacts, [{ profile: { name: 'Sandbox User' }, wa_id: USER }]);
    assert.equal(value.metadata.phone_number_id, phoneNumberId);
    assert.ok(receiver.received.every((webhook) => webhook.signatureValid));
  });

  it('replies, forwards and product enquiries carry context; an ad referral rides on a text and makes replies free', async (t) => {
    const { connect, inbound, receiver, send, sandbox, clock } = await setup(t);
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 're', context: { message_id: 'wamid.original' } });
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'fwd', context: { forwarded: true, frequently_forwarded: true } });
    await inbound({
      phone_number_id: phoneNumberId,
      type: 'text',
      text: 'this one?',
      context: { referred_product: { catalog_id: 'c', product_retailer_id: 'p' } },
    });
    await inbound({
      phone_number_id: phoneNumberId,
      type: 'text',
      text: 'I saw your ad',
      referral: {
        source_url: 'https://fb.test/ad',
        source_id: 'ad-1',
        headline: 'Sale',
        media_type: 'image',
        image_url: 'https://fb.test/i.png',
        ctwa_clid: 'clid',
      },
    });
    const [reply, forwarded, enquiry, referred] = messagesOf(receiver.received);
    assert.equal(reply.context.id, 'wamid.original');
    assert.match(reply.context.from, /^\d+$/);
    assert.deepEqual(forwarded.context, { forwarded: true, frequently_forwarded: true });
    assert.deepEqual(enquiry.context.referred_product, { catalog_id: 'c', product_retailer_id: 'p' });
    assert.equal(referred.referral.source_type, 'ad');
    assert.equal(referred.referral.ctwa_clid, 'clid');
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'image', image: {}, referral: { source_url: 'x' } })).status, 400);

    clock.advance(2 * DAY);
    const template = await send(token, phoneNumberId, { type: 'template', template: { name: 'hello_world', language: { code: 'en_US' } } });
    await sandbox.idle();
    const sent = statusesOf(receiver.received).find((status) => status.id === template.body.messages[0].id && status.status === 'sent')!;
    assert.equal(sent.pricing.type, 'free_entry_point');
    assert.equal(sent.pricing.category, 'referral_conversion');
    assert.equal(sent.conversation.origin.type, 'referral_conversion');
    assert.match(sent.conversation.id, /^[0-9a-f]{32}$/);
  });

  it('inbound requests are validated in the control envelope', async (t) => {
    const { connect, inbound, call } = await setup(t);
    const { phoneNumberId } = await connect();
    const refused = [
      { phone_number_id: phoneNumberId, type: 'text' },
      { phone_number_id: phoneNumberId, type: 'button' },
      { phone_number_id: phoneNumberId, type: 'order', order: { catalog_id: 'c', product_items: [] } },
      { phone_number_id: phoneNumberId, type: 'system' },
      { phone_number_id: phoneNumberId, type: 'system', system: { type: 'customer_changed_number' } },
      { phone_number_id: phoneNumberId, type: 'interactive', interactive: { type: 'nope' } },
      { phone_number_id: phoneNumberId, type: 'text', text: 'x', surprise: true },
      { phone_number_id: phoneNumberId, from: 'not a phone', type: 'text', text: 'x' },
    ];
    for (const body of refused) {
      const answer = await inbound(body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(answer.body.error.code, 'validation_failed');
      assert.equal(typeof answer.body.error.message, 'string');
    }
    const missing = await inbound({ phone_number_id: 'nope', type: 'text', text: 'x' });
    assert.equal(missing.status, 404);
    // The service's envelope, from its catalogue, with a request id and the reference page.
    assert.equal(missing.body.error.type, 'not_found_error');
    assert.equal(missing.body.error.code, 'resource_not_found');
    assert.equal(typeof missing.body.error.request_id, 'string');
    assert.equal(missing.body.error.doc_url, 'http://localhost:3000/docs/errors/resource_not_found');
    const malformed = await call('POST', '/control/inbound', '{oops');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'malformed_json');
    const wrongType = await call('POST', '/control/inbound', 'text', undefined, { 'content-type': 'text/plain' });
    assert.equal(wrongType.status, 415);
    assert.equal(wrongType.body.error.code, 'unsupported_content_type');
    const unknown = await call('POST', '/control/nothing-here', {});
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'route_not_found');
  });
});

describe('the sandbox control API: statuses', () => {
  it('a failed status carries the asked code with the provider title; fail_next_async fails the next send after a 200', async (t) => {
    const { connect, inbound, sendText, call, control, receiver, sandbox } = await setup(t);
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    await control('/behaviour', { auto_status: false });
    const first = await sendText(token, phoneNumberId);
    await control('/status', { message_id: first.body.messages[0].id, status: 'failed', error: { code: 131047, details: 'window closed' } });
    const [failed] = statusesOf(receiver.received);
    assert.equal(failed!.errors![0]!.code, 131047);
    assert.equal((failed!.errors![0] as any).title, 'Re-engagement message');
    assert.equal(failed!.errors![0]!.error_data.details, 'window closed');
    assert.equal(failed!.pricing, undefined);

    await control('/behaviour', { auto_status: true, fail_next_async: { code: 131026, details: 'undeliverable' } });
    const second = await sendText(token, phoneNumberId);
    const third = await sendText(token, phoneNumberId);
    assert.equal(second.status, 200);
    await sandbox.idle();
    const forSecond = statusesOf(receiver.received).filter((status) => status.id === second.body.messages[0].id);
    assert.deepEqual(
      forSecond.map((status) => status.status),
      ['failed'],
    );
    assert.equal(forSecond[0]!.errors![0]!.code, 131026);
    const forThird = statusesOf(receiver.received).filter((status) => status.id === third.body.messages[0].id);
    assert.deepEqual(
      forThird.map((status) => status.status),
      ['sent', 'delivered', 'read'],
    );
    assert.equal((await call('POST', '/control/status', { message_id: first.body.messages[0].id, status: 'lost' })).status, 400);
  });
});

describe('the sandbox control API: number and account notifications', () => {
  it('quality changes update the number and send phone_number_quality_update', async (t) => {
    const { connect, control, call, receiver } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect();
    const answer = await control('/quality', { phone_number_id: phoneNumberId, quality_rating: 'YELLOW' });
    assert.equal(answer.quality_rating, 'YELLOW');
    await control('/quality', { phone_number_id: phoneNumberId, quality_rating: 'GREEN', event: 'UPGRADE' });
    assert.equal((await call('GET', `${V}/${phoneNumberId}`, undefined, token)).body.quality_rating, 'GREEN');
    const values = changesOf(receiver.received, 'phone_number_quality_update');
    assert.equal(values[0]!.entry.id, wabaId);
    assert.deepEqual(
      values.map((change) => change.value.event),
      ['FLAGGED', 'UPGRADE'],
    );
    assert.match(values[0]!.value.display_phone_number, /^\d+$/);
    assert.equal(values[0]!.value.current_limit, 'TIER_250');
    assert.equal(values[0]!.value.old_limit, undefined);
    assert.equal((await call('POST', '/control/quality', { phone_number_id: phoneNumberId, quality_rating: 'BLUE' })).status, 400);
  });

  it('limit tier changes report old and current limits and the daily maximum', async (t) => {
    const { connect, control, call, receiver } = await setup(t);
    const { token, phoneNumberId } = await connect();
    await control('/limit-tier', { phone_number_id: phoneNumberId, tier: 'TIER_2K' });
    await control('/limit-tier', { phone_number_id: phoneNumberId, tier: 'TIER_1K' });
    const node = await call('GET', `${V}/${phoneNumberId}`, undefined, token);
    assert.equal(node.body.messaging_limit_tier, 'TIER_1K');
    assert.equal(node.body.whatsapp_business_manager_messaging_limit, 'TIER_1K');
    const [up, down] = changesOf(receiver.received, 'phone_number_quality_update').map((change) => change.value);
    assert.deepEqual(up, {
      display_phone_number: up.display_phone_number,
      event: 'UPGRADE',
      old_limit: 'TIER_250',
      current_limit: 'TIER_2K',
      max_daily_conversations_per_business: 'TIER_2K',
    });
    assert.equal(down.event, 'DOWNGRADE');
    assert.equal(down.old_limit, 'TIER_2K');
  });

  it('account updates are sent with their details as given', async (t) => {
    const { connect, control, call, receiver } = await setup(t);
    const { wabaId } = await connect();
    await control('/account-update', { waba_id: wabaId, event: 'ACCOUNT_VIOLATION', violation_info: { violation_type: 'SCAM' } });
    const [change] = changesOf(receiver.received, 'account_update');
    assert.deepEqual(change!.value, { event: 'ACCOUNT_VIOLATION', violation_info: { violation_type: 'SCAM' } });
    assert.equal(typeof change!.entry.time, 'number');
    assert.equal((await call('POST', '/control/account-update', { waba_id: wabaId, event: 'NOT_AN_EVENT' })).status, 400);
    assert.equal((await call('POST', '/control/account-update', { waba_id: '1', event: 'ACCOUNT_VIOLATION' })).status, 404);
  });
});

describe('the sandbox control API: coexistence', () => {
  it('an echo of a message typed in the business app arrives as smb_message_echoes', async (t) => {
    const { connect, control, receiver } = await setup(t);
    const { phoneNumberId } = await connect('coexistence');
    await control('/echo', { phone_number_id: phoneNumberId, to: `+${USER}`, type: 'text', text: 'sent from the app' });
    await control('/echo', { phone_number_id: phoneNumberId, to: USER, type: 'image', image: { caption: 'a photo' } });
    const changes = changesOf(receiver.received, 'smb_message_echoes');
    assert.equal(changes.length, 2);
    const [text] = changes[0]!.value.message_echoes;
    assert.equal(changes[0]!.value.messaging_product, 'whatsapp');
    assert.equal(changes[0]!.value.metadata.phone_number_id, phoneNumberId);
    assert.match(text.from, /^\d+$/);
    assert.equal(text.to, USER);
    assert.match(text.id, /^wamid\./);
    assert.deepEqual(text.text, { body: 'sent from the app' });
    assert.match(changes[1]!.value.message_echoes[0].image.id, /^\d+$/);
  });

  it('history chunks carry threads with directions and statuses; a declined share carries error 2593109', async (t) => {
    const { connect, control, receiver } = await setup(t);
    const { phoneNumberId } = await connect('coexistence');
    await control('/history', {
      phone_number_id: phoneNumberId,
      phase: 1,
      chunk_order: 2,
      progress: 40,
      threads: [
        {
          user: USER,
          messages: [
            { direction: 'inbound', text: 'old question', timestamp: 1_700_000_000 },
            { direction: 'outbound', text: 'old answer', timestamp: '2023-11-14T22:14:00Z', status: 'READ' },
            { direction: 'inbound', type: 'image', caption: 'old photo' },
          ],
        },
      ],
    });
    await control('/history', { phone_number_id: phoneNumberId, error: {} });
    const [chunk, declined] = changesOf(receiver.received, 'history').map((change) => change.value.history[0]);
    assert.deepEqual(chunk.metadata, { phase: 1, chunk_order: 2, progress: 40 });
    const [thread] = chunk.threads;
    assert.equal(thread.id, USER);
    const [question, answer, photo] = thread.messages;
    assert.equal(question.from, USER);
    assert.equal(question.to, undefined);
    assert.equal(question.timestamp, '1700000000');
    assert.equal(question.history_context.status, 'READ');
    assert.equal(answer.to, USER);
    assert.equal(answer.timestamp, String(Date.parse('2023-11-14T22:14:00Z') / 1000));
    assert.deepEqual(answer.text, { body: 'old answer' });
    assert.equal(photo.image.caption, 'old photo');
    assert.equal(photo.image.id, undefined);
    assert.equal(declined.errors[0].code, 2593109);
  });

  it('contact syncs arrive as smb_app_state_sync; names are left out on remove', async (t) => {
    const { connect, control, receiver } = await setup(t);
    const { phoneNumberId } = await connect('coexistence');
    await control('/state-sync', {
      phone_number_id: phoneNumberId,
      contacts: [
        { phone_number: USER, full_name: 'Ada Lovelace', first_name: 'Ada' },
        { phone_number: '15550000000', full_name: 'Gone', action: 'remove' },
      ],
    });
    const [added, removed] = changesOf(receiver.received, 'smb_app_state_sync')[0]!.value.state_sync;
    assert.deepEqual(added.contact, { full_name: 'Ada Lovelace', first_name: 'Ada', phone_number: USER });
    assert.equal(added.action, 'add');
    assert.equal(added.type, 'contact');
    assert.match(added.metadata.timestamp, /^\d+$/);
    assert.deepEqual(removed.contact, { phone_number: '15550000000' });
  });

  it('echo, history and contact syncs are refused (409) for numbers that are not coexistence numbers', async (t) => {
    const { connect, call } = await setup(t);
    const { phoneNumberId } = await connect();
    for (const [path, body] of [
      ['/control/echo', { phone_number_id: phoneNumberId, to: USER, type: 'text', text: 'x' }],
      ['/control/history', { phone_number_id: phoneNumberId, progress: 100, threads: [] }],
      ['/control/state-sync', { phone_number_id: phoneNumberId, contacts: [{ phone_number: USER }] }],
    ] as const) {
      const answer = await call('POST', path, body);
      assert.equal(answer.status, 409, path);
      assert.equal(answer.body.error.type, 'conflict_error');
      assert.equal(answer.body.error.code, 'invalid_state');
    }
    const coexistence = await connect('coexistence');
    assert.equal((await call('POST', '/control/history', { phone_number_id: coexistence.phoneNumberId, progress: 10 })).status, 400);
    assert.equal((await call('POST', '/control/history', { phone_number_id: coexistence.phoneNumberId, threads: [] })).status, 400);
  });
});

describe('the sandbox control API: reading state', () => {
  it('numbers, behaviour and recorded webhooks can be read back', async (t) => {
    const { connect, call, inbound } = await setup(t);
    const { phoneNumberId, wabaId } = await connect();
    const numbers = await call('GET', '/control/numbers');
    assert.deepEqual(numbers.body.data[0], {
      phone_number_id: phoneNumberId,
      waba_id: wabaId,
      display_phone_number: numbers.body.data[0].display_phone_number,
      coexistence: false,
      quality_rating: 'GREEN',
      messaging_limit_tier: 'TIER_250',
      throughput_level: 'STANDARD',
      pin_enabled: false,
      subscribed: true,
    });
    const behaviour = await call('GET', '/control/behaviour');
    assert.deepEqual(behaviour.body, {
      latency_ms: 0,
      fail_next: null,
      fail_next_async: null,
      auto_status: true,
      throttle: null,
      throughput_mps: null,
      template_review: 'manual',
    });
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const webhooks = await call('GET', '/control/webhooks');
    assert.equal(webhooks.body.data[0].status, 200);
    assert.equal(webhooks.body.data[0].body.entry[0].changes[0].field, 'messages');
  });
});
