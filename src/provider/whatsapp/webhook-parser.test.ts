import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ProviderUpdate } from '../updates.ts';
import { InvalidProviderWebhookError, parseProviderWebhook } from './webhook-parser.ts';

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`./fixtures/webhooks/${name}.json`, import.meta.url), 'utf8'));
}

function only<K extends ProviderUpdate['kind']>(updates: ProviderUpdate[], kind: K): Extract<ProviderUpdate, { kind: K }>[] {
  return updates.filter((update): update is Extract<ProviderUpdate, { kind: K }> => update.kind === kind);
}

function messageById(updates: ProviderUpdate[], id: string): Extract<ProviderUpdate, { kind: 'message' }> {
  const found = only(updates, 'message').find((update) => update.providerMessageId === id);
  assert.ok(found, `no message ${id}`);
  return found;
}

const NUMBER = { wabaId: '102290129340398', phoneNumberId: '106540352242922', displayPhoneNumber: '15550783881' };

/** An envelope around one change, for the small cases that need no fixture file. */
function envelope(field: string, value: unknown): unknown {
  return { object: 'whatsapp_business_account', entry: [{ id: NUMBER.wabaId, changes: [{ field, value }] }] };
}

describe('parsing provider webhooks: inbound messages', () => {
  it('a text message becomes a message update with its number, sender, profile name and time', () => {
    const updates = parseProviderWebhook(fixture('messages-text'));
    assert.deepEqual(updates, [
      {
        kind: 'message',
        number: NUMBER,
        providerMessageId: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
        from: '16505551234',
        fromUserId: undefined,
        profileName: 'Sheena Nelson',
        sentAt: new Date(1749416383 * 1000),
        body: { type: 'text', content: { body: 'Does it come in another color?' }, context: undefined, extra: {} },
      },
    ]);
  });

  it('every documented message type keeps its type and the object named after it', () => {
    const updates = parseProviderWebhook(fixture('messages-every-type'));
    assert.equal(updates.length, 19);
    assert.ok(updates.every((update) => update.kind === 'message'));
    const types = only(updates, 'message').map((update) => update.body.type);
    assert.deepEqual(types, [
      'image',
      'video',
      'audio',
      'document',
      'sticker',
      'location',
      'contacts',
      'interactive',
      'interactive',
      'interactive',
      'button',
      'reaction',
      'reaction',
      'order',
      'system',
      'request_welcome',
      'text',
      'text',
      'text',
    ]);
    assert.deepEqual(messageById(updates, 'wamid.AUDIO').body.content, {
      mime_type: 'audio/ogg; codecs=opus',
      sha256: 'ElPGwnhmHM7NSRqd4nmjN3pnhUe9nKrAvyr1BB9d7VI=',
      id: '1318312386129430',
      voice: true,
    });
    assert.equal(messageById(updates, 'wamid.IMAGE').body.content.url, 'https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1003383421387256');
    assert.deepEqual(messageById(updates, 'wamid.LIST_REPLY').body.content, {
      type: 'list_reply',
      list_reply: { id: 'priority_express', title: 'Priority Mail Express', description: 'Next Day to 2 Days' },
    });
    assert.deepEqual(messageById(updates, 'wamid.TEMPLATE_BUTTON').body.content, { payload: 'UNSUBSCRIBE_PAYLOAD', text: 'Stop promotions' });
    assert.equal(messageById(updates, 'wamid.ORDER').body.content.catalog_id, '194836987003835');
    assert.equal(messageById(updates, 'wamid.SYSTEM').body.content.type, 'customer_changed_number');
  });

  it('a contacts message wraps the provider array as { contacts }, vcard included', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-every-type')), 'wamid.CONTACTS');
    const contacts = update.body.content.contacts as Record<string, unknown>[];
    assert.equal(contacts.length, 1);
    assert.equal((contacts[0]!.name as Record<string, unknown>).formatted_name, 'Barbara J. Johnson');
    assert.match(String(contacts[0]!.vcard), /^BEGIN:VCARD/);
  });

  it('the profile name comes from the contact whose wa_id is the sender, not from the first contact', () => {
    const updates = parseProviderWebhook(fixture('messages-every-type'));
    assert.equal(messageById(updates, 'wamid.CONTACTS').profileName, 'Pablo Morales');
    assert.equal(messageById(updates, 'wamid.IMAGE').profileName, 'Sheena Nelson');
  });

  it('a reaction without an emoji is kept as given: the caller reads it as a removed reaction', () => {
    const updates = parseProviderWebhook(fixture('messages-every-type'));
    assert.deepEqual(messageById(updates, 'wamid.REACTION').body.content, { message_id: 'wamid.OUTBOUND_TEXT', emoji: '👍' });
    assert.deepEqual(messageById(updates, 'wamid.REACTION_REMOVED').body.content, { message_id: 'wamid.OUTBOUND_TEXT' });
  });

  it('request_welcome has no object and gets empty content', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-every-type')), 'wamid.WELCOME');
    assert.deepEqual(update.body, { type: 'request_welcome', content: {}, context: undefined, extra: {} });
  });

  it('a reply carries the quoted message id; forwarding flags are read; the business number in context is dropped', () => {
    const updates = parseProviderWebhook(fixture('messages-every-type'));
    assert.deepEqual(messageById(updates, 'wamid.BUTTON_REPLY').body.context, { replyTo: 'wamid.OUTBOUND_BUTTONS' });
    assert.deepEqual(messageById(updates, 'wamid.FORWARDED').body.context, { forwarded: true, frequentlyForwarded: true });
    assert.deepEqual(messageById(updates, 'wamid.FORWARDED').body.extra, {});
  });

  it('a product enquiry keeps the whole provider context in extra, as the modelled context cannot hold it', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-every-type')), 'wamid.PRODUCT_ENQUIRY');
    assert.deepEqual(update.body.context, { replyTo: 'wamid.CATALOG' });
    assert.deepEqual((update.body.extra.context as Record<string, unknown>).referred_product, {
      catalog_id: '194836987003835',
      product_retailer_id: 'di9ozbzfi4',
    });
  });

  it('a click-to-chat referral stays in extra, as given', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-every-type')), 'wamid.FROM_AD');
    const referral = update.body.extra.referral as Record<string, unknown>;
    assert.equal(referral.source_type, 'ad');
    assert.equal(referral.ctwa_clid, 'Afc3nYt8kC3Q');
    assert.deepEqual(Object.keys(update.body.extra), ['referral']);
  });

  it('a username-only user (no from, a business-scoped id) still yields a message, named from contacts by user_id', () => {
    const updates = parseProviderWebhook(
      envelope('messages', {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
        contacts: [
          { profile: { name: 'Ada', username: 'ada.l' }, user_id: 'US.13491208655302741918' },
          { profile: { name: 'Other' }, wa_id: '1' },
        ],
        messages: [{ from_user_id: 'US.13491208655302741918', id: 'wamid.BSUID', timestamp: '1749416383', type: 'text', text: { body: 'hi' } }],
      }),
    );
    const [update] = only(updates, 'message');
    assert.equal(update?.from, undefined);
    assert.equal(update?.fromUserId, 'US.13491208655302741918');
    assert.equal(update?.profileName, 'Ada');
  });
});

describe('parsing provider webhooks: unsupported and unknown content', () => {
  it("the provider's unsupported message names the user's real type and keeps its errors in content", () => {
    const update = messageById(parseProviderWebhook(fixture('messages-unsupported')), 'wamid.POLL');
    assert.equal(update.body.type, 'unsupported');
    assert.equal(update.body.content.original_type, 'poll_creation');
    const errors = update.body.content.errors as Record<string, unknown>[];
    assert.equal(errors[0]!.code, 131051);
    assert.deepEqual(update.body.extra, {});
  });

  it('the older type name "unknown" is read as unsupported too', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-unsupported')), 'wamid.OLD_UNKNOWN');
    assert.equal(update.body.type, 'unsupported');
    assert.equal(update.body.content.original_type, 'unknown');
  });

  it('a type this parser has never seen becomes unsupported with original_type, its object and unknown fields kept', () => {
    const update = messageById(parseProviderWebhook(fixture('messages-unsupported')), 'wamid.EPHEMERAL');
    assert.deepEqual(update.body.content, { duration: 24, shape: 'circle', original_type: 'ephemeral_story' });
    assert.deepEqual(update.body.extra, { brand_new_field: { nested: [1, 2, 3] } });
  });

  it('unknown fields inside a known type object stay in content', () => {
    const updates = parseProviderWebhook(
      envelope('messages', {
        metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
        messages: [{ from: '1', id: 'wamid.X', timestamp: '1', type: 'text', text: { body: 'hi', language_hint: 'en' }, identity: { acknowledged: true } }],
      }),
    );
    const [update] = only(updates, 'message');
    assert.deepEqual(update?.body.content, { body: 'hi', language_hint: 'en' });
    assert.deepEqual(update?.body.extra, { identity: { acknowledged: true } });
  });
});

describe('parsing provider webhooks: statuses and errors', () => {
  it('statuses carry their time, recipient, pricing and callback data, in the order sent', () => {
    const updates = parseProviderWebhook(fixture('statuses'));
    const statuses = only(updates, 'status');
    assert.deepEqual(
      statuses.map((status) => status.status),
      ['sent', 'delivered', 'read', 'played', 'failed'],
    );
    assert.deepEqual(statuses[0], {
      kind: 'status',
      number: NUMBER,
      providerMessageId: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA',
      status: 'sent',
      at: new Date(1750263773 * 1000),
      recipientId: '16505551234',
      errors: [],
      pricing: { category: 'utility', type: 'regular' },
      callbackData: 'order-1234',
    });
    assert.equal(statuses[2]?.pricing, undefined);
  });

  it('a failed status carries its errors with title, message and details', () => {
    const failed = only(parseProviderWebhook(fixture('statuses')), 'status').find((status) => status.status === 'failed');
    assert.deepEqual(failed?.errors, [
      {
        code: 131049,
        title: 'This message was not delivered to maintain healthy ecosystem engagement.',
        message: 'This message was not delivered to maintain healthy ecosystem engagement.',
        details: 'In order to maintain a healthy ecosystem engagement, the message failed to be delivered.',
      },
    ]);
  });

  it('out-of-band errors of a number become one errors update', () => {
    assert.deepEqual(parseProviderWebhook(fixture('errors')), [
      {
        kind: 'errors',
        number: NUMBER,
        errors: [{ code: 130429, title: 'Rate limit hit', message: '(#130429) Rate limit hit', details: 'Cloud API message throughput has been reached.' }],
      },
    ]);
  });
});

describe('parsing provider webhooks: coexistence', () => {
  it('messages the owner sent from the business app become echoes to the user', () => {
    const echoes = only(parseProviderWebhook(fixture('echoes')), 'echo');
    assert.equal(echoes.length, 2);
    assert.deepEqual(echoes[0], {
      kind: 'echo',
      number: NUMBER,
      providerMessageId: 'wamid.ECHO_TEXT',
      to: '16505551234',
      sentAt: new Date(1739321024 * 1000),
      body: { type: 'text', content: { body: 'Your order ships tomorrow.' }, context: undefined, extra: {} },
    });
    assert.equal(echoes[1]?.body.content.caption, 'Tracking label');
  });

  it('a history chunk keeps phase, order and progress, and tells business-sent messages by their from', () => {
    const history = only(parseProviderWebhook(fixture('history')), 'history');
    assert.equal(history.length, 3);
    const [first, last] = history;
    assert.equal(first?.phase, 0);
    assert.equal(first?.chunkOrder, 1);
    assert.equal(first?.progress, 55);
    assert.deepEqual(first?.errors, []);
    const [thread, formatted] = first?.threads ?? [];
    assert.equal(thread?.userId, '16505551234');
    assert.deepEqual(
      thread?.messages.map((message) => [message.providerMessageId, message.direction, message.status]),
      [
        ['wamid.HISTORY_IN', 'inbound', 'READ'],
        ['wamid.HISTORY_OUT', 'outbound', 'DELIVERED'],
        ['wamid.HISTORY_MEDIA', 'inbound', 'READ'],
      ],
    );
    // The business number written with punctuation is still the business.
    assert.equal(formatted?.messages[0]?.direction, 'outbound');
    assert.equal(last?.progress, 100);
    assert.deepEqual(last?.threads, []);
  });

  it('a media placeholder of unknown type is kept as unsupported rather than dropped', () => {
    const [first] = only(parseProviderWebhook(fixture('history')), 'history');
    const placeholder = first?.threads[0]?.messages[2];
    assert.equal(placeholder?.body.type, 'unsupported');
    assert.equal(placeholder?.body.content.original_type, 'media_placeholder');
  });

  it('a declined history share arrives as a history update with the error and no threads', () => {
    const declined = only(parseProviderWebhook(fixture('history')), 'history')[2];
    assert.equal(declined?.number.phoneNumberId, '106540352242999');
    assert.equal(declined?.number.wabaId, '102290129340399');
    assert.equal(declined?.progress, undefined);
    assert.deepEqual(declined?.threads, []);
    assert.equal(declined?.errors[0]?.code, 2593109);
  });
});

describe('parsing provider webhooks: account management fields', () => {
  it('template status events carry the status in domain words, the category, the reason and the rest as extra', () => {
    const events = only(parseProviderWebhook(fixture('management')), 'template_status');
    assert.deepEqual(events[0], {
      kind: 'template_status',
      wabaId: '102290129340398',
      providerTemplateId: '806312974732579',
      name: 'order_confirmation',
      language: 'en_US',
      event: 'APPROVED',
      status: 'approved',
      category: 'utility',
      reason: 'NONE',
      extra: {},
    });
    assert.equal(events[1]?.status, 'rejected');
    assert.equal(events[1]?.reason, 'INCORRECT_CATEGORY');
    assert.deepEqual(events[1]?.extra.rejection_info, { reason: 'The template is promotional.', recommendation: 'Submit it as MARKETING.' });
    assert.equal(events[2]?.status, 'paused');
    assert.equal(events[2]?.reason, undefined);
    assert.equal(events[2]?.category, undefined);
  });

  it('an event that names no status (REINSTATED) leaves status undefined, and a string template id is read too', () => {
    const reinstated = only(parseProviderWebhook(fixture('management')), 'template_status')[3];
    assert.equal(reinstated?.event, 'REINSTATED');
    assert.equal(reinstated?.status, undefined);
    assert.equal(reinstated?.providerTemplateId, '806312974732581');
  });

  it('quality updates carry the portfolio limit and the deprecated limits while they are sent', () => {
    const quality = only(parseProviderWebhook(fixture('management')), 'number_quality');
    assert.deepEqual(quality[0], {
      kind: 'number_quality',
      wabaId: '102290129340398',
      displayPhoneNumber: '15550783881',
      event: 'THROUGHPUT_UPGRADE',
      maxDailyLimit: 'TIER_UNLIMITED',
      currentLimit: 'TIER_UNLIMITED',
      oldLimit: undefined,
    });
    assert.equal(quality[1]?.oldLimit, 'TIER_250');
    assert.equal(quality[1]?.maxDailyLimit, undefined);
  });

  it('account updates carry the event and keep waba_info, violation_info and the like as extra', () => {
    const accounts = only(parseProviderWebhook(fixture('management')), 'account');
    assert.deepEqual(accounts[0], {
      kind: 'account',
      wabaId: '102290129340398',
      event: 'PARTNER_REMOVED',
      phoneNumberId: undefined,
      extra: { waba_info: { waba_id: '102290129340398', owner_business_id: '1882305122147850' } },
    });
    assert.deepEqual(accounts[1]?.extra, { violation_info: { violation_type: 'SCAM' } });
  });
});

describe('parsing provider webhooks: odd and broken payloads', () => {
  it('a body that is not an envelope throws InvalidProviderWebhookError, the caller answers 400', () => {
    for (const body of [null, 'text', 42, [], {}, { object: 'whatsapp_business_account' }, { entry: {} }, { entry: 'x' }]) {
      assert.throws(() => parseProviderWebhook(body), InvalidProviderWebhookError, JSON.stringify(body));
    }
  });

  it('an envelope with no entries is simply empty', () => {
    assert.deepEqual(parseProviderWebhook({ object: 'whatsapp_business_account', entry: [] }), []);
  });

  it('every broken part is reported as unhandled/malformed while its good siblings are parsed', () => {
    const updates = parseProviderWebhook(fixture('odd'));
    const good = updates.filter((update) => update.kind !== 'unhandled');
    assert.deepEqual(
      good.map((update) => [update.kind, 'providerMessageId' in update ? update.providerMessageId : undefined]),
      [
        ['message', 'wamid.NO_CONTACTS'],
        ['message', 'wamid.TEXT_WITHOUT_OBJECT'],
        ['message', 'wamid.NUMERIC_TIME'],
        ['status', 'wamid.OK'],
      ],
    );
    const malformed = only(updates, 'unhandled').filter((update) => update.reason === 'malformed');
    // 3 broken entries, 3 broken changes, 1 change without metadata, 4 broken messages, 1 unknown
    // status, and 3 management values without their required fields.
    assert.equal(malformed.length, 15);
    assert.deepEqual(malformed[0], { kind: 'unhandled', wabaId: '', field: '', reason: 'malformed', value: 'not an entry' });
    assert.equal(malformed[2]?.wabaId, '102290129340398');
    assert.ok(malformed.some((update) => (update.value as Record<string, unknown> | undefined)?.status === 'deleted'));
    assert.ok(malformed.some((update) => update.value === 42));
  });

  it('a message without contacts has no profile name; a type object that is not an object gives empty content', () => {
    const updates = parseProviderWebhook(fixture('odd'));
    const lonely = messageById(updates, 'wamid.NO_CONTACTS');
    assert.equal(lonely.profileName, undefined);
    assert.equal(lonely.from, '16505551234');
    assert.deepEqual(messageById(updates, 'wamid.TEXT_WITHOUT_OBJECT').body.content, {});
    const numeric = messageById(updates, 'wamid.NUMERIC_TIME');
    assert.deepEqual(numeric.body.content, {});
    assert.deepEqual(numeric.sentAt, new Date(1749416385 * 1000));
  });

  it('a pricing that is not an object is ignored rather than trusted', () => {
    const [status] = only(parseProviderWebhook(fixture('odd')), 'status');
    assert.equal(status?.pricing, undefined);
  });

  it('fields we do not process (calls, contact sync) and an empty messages value are unhandled/unprocessed_field, value kept', () => {
    const unprocessed = only(parseProviderWebhook(fixture('odd')), 'unhandled').filter((update) => update.reason === 'unprocessed_field');
    assert.deepEqual(
      unprocessed.map((update) => update.field),
      ['messages', 'calls', 'smb_app_state_sync'],
    );
    const sync = unprocessed[2]?.value as Record<string, unknown>;
    assert.ok(Array.isArray(sync.state_sync));
  });

  it("another product's webhook on the same callback is kept as unhandled, never read as WhatsApp", () => {
    const updates = parseProviderWebhook({
      object: 'page',
      entry: [{ id: '123', time: 1, changes: [{ field: 'messages', value: { messages: [{ id: 'm', timestamp: '1', type: 'text' }] } }] }],
    });
    assert.deepEqual(
      updates.map((update) => [update.kind, update.kind === 'unhandled' ? update.reason : '']),
      [['unhandled', 'unprocessed_field']],
    );
  });

  it('batched entries and changes come out in the order the provider listed them', () => {
    const text = fixture('messages-text') as { entry: { changes: unknown[] }[] };
    const statuses = fixture('statuses') as { entry: { changes: unknown[] }[] };
    const batched = {
      object: 'whatsapp_business_account',
      entry: [
        { id: '102290129340398', changes: [...statuses.entry[0]!.changes, ...text.entry[0]!.changes] },
        ...(fixture('echoes') as { entry: unknown[] }).entry,
      ],
    };
    assert.deepEqual(
      parseProviderWebhook(batched).map((update) => update.kind),
      ['status', 'status', 'status', 'status', 'status', 'message', 'echo', 'echo'],
    );
  });

  it('no fuzzed variant of the fixtures makes the parser throw', () => {
    const names = ['messages-text', 'messages-every-type', 'messages-unsupported', 'statuses', 'errors', 'echoes', 'history', 'management', 'odd'];
    const oddValues: unknown[] = [null, 0, -1, '', 'x', true, [], {}, [null], { a: 1 }, 1e308, '99999999999999999999'];
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    /** Replaces one random node of the tree with an odd value. */
    const mutate = (node: unknown, depth: number): unknown => {
      if (depth > 0 && random(4) === 0) return oddValues[random(oddValues.length)];
      if (Array.isArray(node)) return node.map((item) => mutate(item, depth + 1));
      if (node !== null && typeof node === 'object') {
        return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, mutate(value, depth + 1)]));
      }
      return node;
    };
    for (const name of names) {
      const original = fixture(name);
      for (let round = 0; round < 200; round += 1) {
        const variant = mutate(original, 0);
        try {
          parseProviderWebhook(variant);
        } catch (error) {
          assert.ok(error instanceof InvalidProviderWebhookError, `${name} round ${round}: ${String(error)}`);
        }
      }
    }
  });
});
