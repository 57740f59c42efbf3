import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import Fastify from 'fastify';
import { request } from 'undici';
import { ManualClock } from '../../lib/clock.ts';
import { sandboxStore } from '../sandbox/harness.test.ts';
import { createSandboxProvider, type SandboxProvider, type SandboxProviderOptions } from '../sandbox/index.ts';
import { ProviderError, providerErrorToAppError, type ProviderCredentials } from '../provider.ts';
import { createCloudProvider, type CloudProviderOptions } from './cloud-adapter.ts';
import { retryAfterSeconds } from './graph-errors.ts';
import { parseProviderWebhook } from './webhook-parser.ts';
import { verifyProviderSignature } from './webhook-signature.ts';
import { rejectionOf } from '../../../test/rejection.ts';

const APP_SECRET = 'test-app-secret';
const USER = '15551234567';

/** The sandbox on a loopback port, and the adapter pointed at it over real HTTP. */
async function setup(t: TestContext, overrides: Partial<CloudProviderOptions> = {}, sandboxOptions: Partial<SandboxProviderOptions> = {}) {
  const sandbox = createSandboxProvider({
    store: await sandboxStore(t),
    clock: new ManualClock('2026-03-01T12:00:00Z'),
    appSecret: APP_SECRET,
    autoStatus: false,
    ...sandboxOptions,
  });
  const app = Fastify();
  await app.register(sandbox.plugin, { prefix: '/sandbox' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/sandbox`;
  const provider = createCloudProvider({ baseUrl: `${base}/graph`, version: 'v24.0', appId: 'app', appSecret: APP_SECRET, ...overrides });
  t.after(async () => {
    await provider.close();
    sandbox.close();
    await app.close();
  });

  async function control(path: string, body: unknown): Promise<any> {
    const response = await request(`${base}/control${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(response.statusCode, 200, `control ${path}`);
    return response.body.json();
  }

  /** Embedded Signup's code exchange; a code starting with `coexistence` onboards a business-app number. */
  async function connect(code = 'signup-code'): Promise<ProviderCredentials> {
    const exchanged = await provider.exchangeCode(code);
    assert.ok(exchanged.wabaId !== undefined && exchanged.phoneNumberId !== undefined);
    return { accessToken: exchanged.accessToken, wabaId: exchanged.wabaId, phoneNumberId: exchanged.phoneNumberId };
  }

  /** The user writes first, which opens the 24-hour window; answers the inbound wamid. */
  async function userWrites(credentials: ProviderCredentials): Promise<string> {
    const answer = await control('/inbound', { phone_number_id: credentials.phoneNumberId, from: USER, type: 'text', text: 'hi' });
    return answer.message_id as string;
  }

  const failNext = (failure: { code: number; http_status?: number }) => control('/behaviour', { fail_next: failure });

  return { provider, sandbox, control, connect, userWrites, failNext };
}

/** A throwaway loopback server that misbehaves as told; answers the adapter's base URL. */
async function startServer(t: TestContext, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const someCredentials: ProviderCredentials = { accessToken: 'token', phoneNumberId: '123', wabaId: '456' };

describe('the cloud adapter against the sandbox: happy path', () => {
  it('exchanging a code finds the token, the account and its one number the provider way', async (t) => {
    const { provider, sandbox } = await setup(t);
    const exchanged = await provider.exchangeCode('signup-code');
    const [number] = await sandbox.state.listNumbers();
    assert.ok(number !== undefined);
    assert.equal(typeof exchanged.accessToken, 'string');
    assert.equal(exchanged.wabaId, number.wabaId);
    assert.equal(exchanged.phoneNumberId, number.phoneNumberId);
  });

  it('sending a text inside the window answers the wamid and the resolved wa_id', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    await userWrites(credentials);
    const sent = await provider.sendMessage(credentials, { to: `+${USER}`, type: 'text', text: 'hello', callbackData: 'order-1' });
    assert.match(sent.providerMessageId, /^wamid\./);
    assert.equal(sent.recipientWaId, USER);
  });

  it('a template is accepted outside the window', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const sent = await provider.sendMessage(credentials, { to: USER, type: 'template', name: 'hello_world', language: 'en_US' });
    assert.match(sent.providerMessageId, /^wamid\./);
  });

  it('marking an inbound message read and showing typing both succeed', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    const inbound = await userWrites(credentials);
    await provider.markRead(credentials, inbound);
    await provider.sendTyping(credentials, inbound);
  });

  it('reading the phone number answers it in the domain words', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const info = await provider.getPhoneNumber(credentials);
    assert.equal(info.phoneNumberId, credentials.phoneNumberId);
    assert.match(info.displayPhoneNumber, /^\+1 /);
    assert.equal(info.qualityRating, 'GREEN');
    assert.equal(info.throughputLevel, 'STANDARD');
    assert.equal(info.messagingLimitTier, 'TIER_250');
    assert.equal(typeof info.verifiedName, 'string');
  });

  it('appsecret_proof is sent only when configured, as HMAC-SHA256 of the token', async (t) => {
    const seen: string[] = [];
    const base = await startServer(t, (req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true }));
    });
    const plain = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    const proving = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, appSecretProof: true });
    t.after(async () => Promise.all([plain.close(), proving.close()]));
    await plain.subscribeApp(someCredentials);
    await proving.subscribeApp(someCredentials);
    assert.equal(seen[0], '/v24.0/456/subscribed_apps');
    const expected = createHmac('sha256', APP_SECRET).update('token').digest('hex');
    assert.equal(seen[1], `/v24.0/456/subscribed_apps?appsecret_proof=${expected}`);
  });
});

describe('the cloud adapter against the sandbox: provider errors', () => {
  it('a token the provider does not know is an auth failure, mapped to connection_needs_reauth', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(provider.sendMessage({ ...credentials, accessToken: 'revoked' }, { to: USER, type: 'text', text: 'x' }), ProviderError);
    assert.equal(error.category, 'auth');
    assert.equal(error.code, 190);
    assert.equal(error.httpStatus, 401);
    assert.equal(error.retryable, false);
    assert.equal(typeof error.traceId, 'string');
    assert.equal(providerErrorToAppError(error).code, 'connection_needs_reauth');
  });

  it('a free-form message outside the window is rejected for good, keeping the provider code', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(provider.sendMessage(credentials, { to: USER, type: 'text', text: 'late' }), ProviderError);
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 131047);
    assert.equal(error.retryable, false);
    assert.equal(error.retryAfterSeconds, undefined);
    const appError = providerErrorToAppError(error);
    assert.equal(appError.code, 'provider_rejected');
    assert.equal(appError.status, 502);
    const provided = appError.extra.provider as Record<string, unknown>;
    assert.equal(provided.code, 131047);
    assert.equal(provided.trace_id, error.traceId);
    assert.match(String(provided.message), /^\(#131047\) /);
  });

  it('an unknown phone number id is rejected with code 100 and its subcode', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(provider.getPhoneNumber({ ...credentials, phoneNumberId: '999' }), ProviderError);
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 100);
    assert.equal(error.subcode, 33);
  });

  it('throughput limit 130429 is throttled and retryable after at least a second', async (t) => {
    const { provider, connect, userWrites, failNext } = await setup(t);
    const credentials = await connect();
    await userWrites(credentials);
    await failNext({ code: 130429 });
    const error = await rejectionOf(provider.sendMessage(credentials, { to: USER, type: 'text', text: 'x' }), ProviderError);
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, 400);
    assert.ok(error.retryAfterSeconds !== undefined && error.retryAfterSeconds >= 1);
    const appError = providerErrorToAppError(error);
    assert.equal(appError.code, 'provider_throttled');
    assert.equal(appError.headers['retry-after'], String(error.retryAfterSeconds));
  });

  it('the pair rate limit 131056 waits six seconds', async (t) => {
    const { provider, connect, failNext } = await setup(t);
    const credentials = await connect();
    await failNext({ code: 131056 });
    const error = await rejectionOf(provider.markRead(credentials, 'wamid.x'), ProviderError);
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryAfterSeconds, 6);
  });

  it('131000 on HTTP 500 is a retryable unavailability mapped to provider_unavailable', async (t) => {
    const { provider, connect, failNext } = await setup(t);
    const credentials = await connect();
    await failNext({ code: 131000, http_status: 500 });
    const error = await rejectionOf(provider.getPhoneNumber(credentials), ProviderError);
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.code, 131000);
    assert.equal(error.httpStatus, 500);
    assert.equal(providerErrorToAppError(error).code, 'provider_unavailable');
  });

  it('a wrong app secret during the exchange is rejected, not retried (code 1 on a 4xx)', async (t) => {
    const { provider } = await setup(t, { appSecret: 'wrong' });
    const error = await rejectionOf(provider.exchangeCode('signup-code'), ProviderError);
    assert.equal(error.code, 1);
    assert.equal(error.category, 'rejected');
    assert.equal(error.retryable, false);
  });

  it('a template the account does not have is rejected with 132001', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(
      provider.sendMessage(credentials, { to: USER, type: 'template', name: 'no_such_template', language: 'en_US' }),
      ProviderError,
    );
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 132001);
  });
});

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** The last webhook the sandbox produced (sent or only recorded), as the parser reads it. */
async function lastWebhook(sandbox: SandboxProvider) {
  const delivery = (await sandbox.deliveries()).at(-1);
  assert.ok(delivery, 'the sandbox sent no webhook');
  assert.equal(verifyProviderSignature(Buffer.from(delivery.body), delivery.signature, APP_SECRET), true);
  return parseProviderWebhook(JSON.parse(delivery.body));
}

describe('the cloud adapter against the sandbox: onboarding', () => {
  it('subscribing and unsubscribing the app change the account subscription', async (t) => {
    const { provider, sandbox, connect } = await setup(t);
    const credentials = await connect();
    await provider.subscribeApp(credentials);
    assert.equal((await sandbox.state.subscriptions(credentials.wabaId)).length, 1);
    await provider.unsubscribeApp(credentials);
    assert.equal((await sandbox.state.subscriptions(credentials.wabaId)).length, 0);
  });

  it('a Cloud API number registers with a six-digit PIN and reads as not on the business app', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    await provider.registerNumber(credentials, '246810');
    const info = await provider.getPhoneNumber(credentials);
    assert.equal(info.isOnBizApp, false);
    assert.equal(info.platformType, 'CLOUD_API');
  });

  it('the exchange lists the account numbers', async (t) => {
    const { provider } = await setup(t);
    const exchanged = await provider.exchangeCode('signup-code');
    assert.deepEqual(exchanged.phoneNumberIds, [exchanged.phoneNumberId]);
  });

  it('a coexistence number reads as on the business app, and registering it is refused', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect('coexistence-code');
    assert.equal((await provider.getPhoneNumber(credentials)).isOnBizApp, true);
    const error = await rejectionOf(provider.registerNumber(credentials, '246810'), ProviderError);
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 100);
  });

  it('a coexistence number can ask once each for its history and contacts', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect('coexistence-code');
    const history = await provider.requestHistorySync(credentials, 'history');
    const contacts = await provider.requestHistorySync(credentials, 'contacts');
    assert.equal(typeof history.requestId, 'string');
    assert.notEqual(history.requestId, contacts.requestId);
    const again = await rejectionOf(provider.requestHistorySync(credentials, 'history'), ProviderError);
    assert.equal(again.code, 2593107);
    assert.equal(again.retryable, false);
  });

  it('a Cloud API number cannot ask for a history sync', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(provider.requestHistorySync(credentials, 'history'), ProviderError);
    assert.equal(error.category, 'rejected');
  });
});

describe('the cloud adapter against the sandbox: media', () => {
  it('uploaded media is described, downloaded byte for byte, sent by id, and deleted', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    const bytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200_000, 3)]);
    const { providerMediaId } = await provider.uploadMedia(credentials, { bytes, mimeType: 'image/jpeg', filename: 'photo.jpg' });

    const info = await provider.getMedia(credentials, providerMediaId);
    assert.equal(info.providerMediaId, providerMediaId);
    assert.equal(info.mimeType, 'image/jpeg');
    assert.equal(info.fileSize, bytes.length);
    assert.equal(info.sha256, createHash('sha256').update(bytes).digest('hex'));

    const media = await provider.downloadMedia(credentials, providerMediaId);
    assert.equal(media.mimeType, 'image/jpeg');
    assert.equal(media.size, bytes.length);
    assert.deepEqual(await readAll(media.stream), bytes);

    await userWrites(credentials);
    const sent = await provider.sendMessage(credentials, { to: USER, type: 'image', media: { id: providerMediaId }, caption: 'here' });
    assert.match(sent.providerMessageId, /^wamid\./);

    await provider.deleteMedia(credentials, providerMediaId);
    const gone = await rejectionOf(provider.getMedia(credentials, providerMediaId), ProviderError);
    assert.equal(gone.category, 'rejected');
    assert.equal(gone.code, 100);
  });

  it('a download over maxBytes is refused from the provider size before any byte is read', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const { providerMediaId } = await provider.uploadMedia(credentials, { bytes: Buffer.alloc(50_000, 1), mimeType: 'application/pdf' });
    const error = await rejectionOf(provider.downloadMedia(credentials, providerMediaId, { maxBytes: 10_000 }), ProviderError);
    assert.equal(error.category, 'rejected');
  });

  it('a type the provider does not take is rejected with 131053', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const error = await rejectionOf(provider.uploadMedia(credentials, { bytes: Buffer.from('MZ'), mimeType: 'application/x-msdownload' }), ProviderError);
    assert.equal(error.category, 'rejected');
    assert.equal(error.code, 131053);
  });

  it('media of another account cannot be read', async (t) => {
    const { provider, connect } = await setup(t);
    const owner = await connect('first-code');
    const stranger = await connect('second-code');
    const { providerMediaId } = await provider.uploadMedia(owner, { bytes: Buffer.from('hello'), mimeType: 'text/plain' });
    const error = await rejectionOf(provider.getMedia(stranger, providerMediaId), ProviderError);
    assert.equal(error.code, 100);
  });
});

describe('the cloud adapter against the sandbox: templates', () => {
  const orderUpdate = {
    name: 'order_update',
    language: 'en_US',
    category: 'utility' as const,
    components: [
      { type: 'header' as const, format: 'text' as const, text: 'Order {{1}}', example: '#42' },
      { type: 'body' as const, text: 'Hi {{1}}, your order of {{2}} ships on {{3}}.', examples: ['Ada', '€12.34', 'March 3'] },
      { type: 'footer' as const, text: 'Reply STOP to opt out' },
      {
        type: 'buttons' as const,
        buttons: [
          { type: 'quick_reply' as const, text: 'Stop' },
          { type: 'url' as const, text: 'Track', url: 'https://example.com/t/{{1}}', example: 'https://example.com/t/42' },
        ],
      },
    ],
  };

  it('a new template is pending, lists in domain words next to hello_world, and round-trips its components', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const created = await provider.createTemplate(credentials, orderUpdate);
    assert.equal(created.status, 'pending');
    assert.equal(created.category, 'utility');
    const templates = await provider.listTemplates(credentials);
    assert.deepEqual(templates.map((template) => [template.name, template.status]).sort(), [
      ['hello_world', 'approved'],
      ['order_update', 'pending'],
    ]);
    const listed = templates.find((template) => template.providerTemplateId === created.providerTemplateId);
    assert.deepEqual(listed?.components, orderUpdate.components);
    assert.equal(listed?.parameterFormat, 'positional');
  });

  it('listing walks every page of an account with more templates than a page holds', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    for (let index = 0; index < 105; index += 1) {
      await provider.createTemplate(credentials, {
        name: `bulk_${index}`,
        language: 'en_US',
        category: 'marketing',
        components: [{ type: 'body', text: `Offer ${index}` }],
      });
    }
    const templates = await provider.listTemplates(credentials);
    assert.equal(templates.length, 106);
    assert.equal(new Set(templates.map((template) => template.providerTemplateId)).size, 106);
  });

  it('an approved template is sent with header, body (text, currency, date) and button parameters', async (t) => {
    const { provider, sandbox, connect } = await setup(t, {}, { templateReview: 'approve' });
    const credentials = await connect();
    await provider.createTemplate(credentials, orderUpdate);
    await sandbox.idle();
    const [template] = (await provider.listTemplates(credentials)).filter((candidate) => candidate.name === 'order_update');
    assert.equal(template?.status, 'approved');
    const sent = await provider.sendMessage(credentials, {
      to: USER,
      type: 'template',
      name: 'order_update',
      language: 'en_US',
      headerParameter: { type: 'text', text: '#42' },
      bodyParameters: [
        { type: 'text', text: 'Ada' },
        { type: 'currency', fallback: '€12.34', currencyCode: 'EUR', amount1000: 12_340 },
        { type: 'date_time', fallback: 'March 3' },
      ],
      buttonParameters: [{ type: 'url', index: 1, urlSuffix: '42' }],
    });
    assert.match(sent.providerMessageId, /^wamid\./);
  });

  it('named parameters are accepted for a named template', async (t) => {
    const { provider, sandbox, connect } = await setup(t, {}, { templateReview: 'approve' });
    const credentials = await connect();
    await provider.createTemplate(credentials, {
      name: 'welcome_named',
      language: 'en_US',
      category: 'marketing',
      parameterFormat: 'named',
      components: [
        { type: 'header', format: 'text', text: 'Hello {{first_name}}', example: 'Ada' },
        { type: 'body', text: 'Your code is {{code}}, {{first_name}}.', examples: { code: '1234', first_name: 'Ada' } },
      ],
    });
    await sandbox.idle();
    const sent = await provider.sendMessage(credentials, {
      to: USER,
      type: 'template',
      name: 'welcome_named',
      language: 'en_US',
      headerParameter: { type: 'text', text: 'Ada', name: 'first_name' },
      bodyParameters: [
        { type: 'text', text: '1234', name: 'code' },
        { type: 'text', text: 'Ada', name: 'first_name' },
      ],
    });
    assert.match(sent.providerMessageId, /^wamid\./);
  });

  it('a pending template cannot be sent yet, and a wrong parameter count is rejected with 132000', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    await provider.createTemplate(credentials, orderUpdate);
    const pending = await rejectionOf(
      provider.sendMessage(credentials, { to: USER, type: 'template', name: 'order_update', language: 'en_US' }),
      ProviderError,
    );
    assert.equal(pending.code, 132001);
    const count = await rejectionOf(
      provider.sendMessage(credentials, { to: USER, type: 'template', name: 'hello_world', language: 'en_US', bodyParameters: [{ type: 'text', text: 'x' }] }),
      ProviderError,
    );
    assert.equal(count.code, 132000);
  });

  it('the status webhook of a reviewed template parses to a template_status update in domain words', async (t) => {
    const { provider, sandbox, connect, control } = await setup(t);
    const credentials = await connect();
    const created = await provider.createTemplate(credentials, orderUpdate);
    await control('/template-status', { template_id: created.providerTemplateId, status: 'REJECTED', reason: 'INCORRECT_CATEGORY' });
    const [update] = await lastWebhook(sandbox);
    assert.equal(update?.kind, 'template_status');
    assert.ok(update?.kind === 'template_status');
    assert.equal(update.providerTemplateId, created.providerTemplateId);
    assert.equal(update.status, 'rejected');
    assert.equal(update.reason, 'INCORRECT_CATEGORY');
    const [listed] = await provider.listTemplates(credentials).then((all) => all.filter((template) => template.name === 'order_update'));
    assert.equal(listed?.status, 'rejected');
  });

  it('deleting by name removes the template; deleting an unknown one is rejected', async (t) => {
    const { provider, connect } = await setup(t);
    const credentials = await connect();
    const created = await provider.createTemplate(credentials, orderUpdate);
    await provider.deleteTemplate(credentials, { name: 'order_update', providerTemplateId: created.providerTemplateId });
    assert.deepEqual(
      (await provider.listTemplates(credentials)).map((template) => template.name),
      ['hello_world'],
    );
    const error = await rejectionOf(provider.deleteTemplate(credentials, { name: 'order_update' }), ProviderError);
    assert.equal(error.category, 'rejected');
  });
});

describe('the cloud adapter against the sandbox: rich messages', () => {
  it('reply buttons, a list and a contact card are accepted inside the window', async (t) => {
    const { provider, connect, userWrites } = await setup(t);
    const credentials = await connect();
    const inbound = await userWrites(credentials);
    const buttons = await provider.sendMessage(credentials, {
      to: USER,
      type: 'interactive',
      replyTo: inbound,
      interactive: {
        kind: 'buttons',
        header: { type: 'text', text: 'Your order' },
        body: 'Change or cancel?',
        footer: 'Reply within a day',
        buttons: [
          { id: 'change', title: 'Change' },
          { id: 'cancel', title: 'Cancel' },
        ],
      },
    });
    const list = await provider.sendMessage(credentials, {
      to: USER,
      type: 'interactive',
      interactive: {
        kind: 'list',
        body: 'Pick a shipping option',
        buttonLabel: 'Options',
        sections: [{ title: 'Speed', rows: [{ id: 'express', title: 'Express', description: 'Next day' }] }],
      },
    });
    const card = await provider.sendMessage(credentials, {
      to: USER,
      type: 'contacts',
      contacts: [{ name: { formattedName: 'Support desk' }, phones: [{ phone: '+15550783881', type: 'work' }] }],
    });
    for (const sent of [buttons, list, card]) assert.match(sent.providerMessageId, /^wamid\./);
  });
});

describe('the sandbox webhooks through the parser', () => {
  it('an inbound message, its status walk and the signature all read back in domain words', async (t) => {
    const { provider, sandbox, connect, userWrites, control } = await setup(t);
    const credentials = await connect();
    const inbound = await userWrites(credentials);
    const [message] = await lastWebhook(sandbox);
    assert.equal(message?.kind, 'message');
    assert.ok(message?.kind === 'message');
    assert.equal(message.providerMessageId, inbound);
    assert.equal(message.from, USER);
    assert.deepEqual(message.body.content, { body: 'hi' });
    assert.equal(message.number.phoneNumberId, credentials.phoneNumberId);

    const sent = await provider.sendMessage(credentials, { to: USER, type: 'text', text: 'hello', callbackData: 'order-1' });
    await control('/status', {
      message_id: sent.providerMessageId,
      status: 'failed',
      error: { code: 131026, details: 'Receiver is incapable of receiving this message' },
    });
    const [status] = await lastWebhook(sandbox);
    assert.ok(status?.kind === 'status');
    assert.equal(status.status, 'failed');
    assert.equal(status.callbackData, 'order-1');
    assert.equal(status.errors[0]?.code, 131026);
  });

  it('coexistence echoes, history, contact syncs and account updates parse without a malformed part', async (t) => {
    const { sandbox, connect, control } = await setup(t);
    const credentials = await connect('coexistence-code');
    await control('/echo', { phone_number_id: credentials.phoneNumberId, to: USER, type: 'text', text: 'sent from the app' });
    const [echo] = await lastWebhook(sandbox);
    assert.ok(echo?.kind === 'echo');
    assert.equal(echo.to, USER);
    assert.equal(echo.body.type, 'text');

    await control('/history', {
      phone_number_id: credentials.phoneNumberId,
      phase: 1,
      chunk_order: 2,
      progress: 100,
      threads: [
        {
          user: USER,
          messages: [
            { direction: 'inbound', text: 'old question' },
            { direction: 'outbound', text: 'old answer', status: 'READ' },
          ],
        },
      ],
    });
    const [history] = await lastWebhook(sandbox);
    assert.ok(history?.kind === 'history');
    assert.equal(history.progress, 100);
    assert.deepEqual(
      history.threads[0]?.messages.map((message) => message.direction),
      ['inbound', 'outbound'],
    );

    await control('/state-sync', { phone_number_id: credentials.phoneNumberId, contacts: [{ phone_number: USER, full_name: 'Ada' }] });
    const [sync] = await lastWebhook(sandbox);
    assert.ok(sync?.kind === 'unhandled');
    assert.equal(sync.reason, 'unprocessed_field');
    assert.equal(sync.field, 'smb_app_state_sync');

    await control('/limit-tier', { phone_number_id: credentials.phoneNumberId, tier: 'TIER_2K' });
    const [quality] = await lastWebhook(sandbox);
    assert.ok(quality?.kind === 'number_quality');
    assert.equal(quality.maxDailyLimit, 'TIER_2K');
    assert.equal(quality.oldLimit, 'TIER_250');

    await control('/account-update', { waba_id: credentials.wabaId, event: 'PARTNER_REMOVED' });
    const [account] = await lastWebhook(sandbox);
    assert.ok(account?.kind === 'account');
    assert.equal(account.event, 'PARTNER_REMOVED');
    assert.equal(account.wabaId, credentials.wabaId);

    for (const delivery of await sandbox.deliveries()) {
      const malformed = parseProviderWebhook(JSON.parse(delivery.body)).filter((update) => update.kind === 'unhandled' && update.reason === 'malformed');
      assert.deepEqual(malformed, [], delivery.body);
    }
  });
});

describe('the cloud adapter: transport faults', () => {
  it('an answer that is not JSON is unavailable and retryable', async (t) => {
    const base = await startServer(t, (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>'));
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 1000 });
    t.after(() => provider.close());
    const error = await rejectionOf(provider.getPhoneNumber(someCredentials), ProviderError);
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, 502);
    assert.equal(providerErrorToAppError(error).code, 'provider_unavailable');
  });

  it('a socket closed before any answer is unavailable and retryable', async (t) => {
    const base = await startServer(t, (req) => req.socket.destroy());
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 1000 });
    t.after(() => provider.close());
    const error = await rejectionOf(provider.sendMessage(someCredentials, { to: USER, type: 'text', text: 'x' }), ProviderError);
    assert.equal(error.category, 'unavailable');
    assert.equal(error.retryable, true);
    assert.equal(error.httpStatus, undefined);
  });

  it('a server that never answers times out after timeoutMs, mapped to provider_timeout', async (t) => {
    const base = await startServer(t, () => undefined);
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 200 });
    t.after(() => provider.close());
    const started = Date.now();
    const error = await rejectionOf(provider.markRead(someCredentials, 'wamid.x'), ProviderError);
    assert.ok(Date.now() - started < 2000);
    assert.equal(error.category, 'timeout');
    assert.equal(error.retryable, true);
    assert.equal(providerErrorToAppError(error).code, 'provider_timeout');
  });

  it('nothing listening on the port is unavailable', async (t) => {
    const base = await startServer(t, () => undefined);
    const closedPort = base.replace(/:\d+$/, ':1');
    const provider = createCloudProvider({ baseUrl: closedPort, version: 'v24.0', appSecret: APP_SECRET, timeoutMs: 500 });
    t.after(() => provider.close());
    const error = await rejectionOf(provider.getPhoneNumber(someCredentials), ProviderError);
    assert.equal(error.category, 'unavailable');
  });

  it('a 5xx JSON answer without the Graph envelope is unavailable', async (t) => {
    const base = await startServer(t, (_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"down"}'));
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    t.after(() => provider.close());
    const error = await rejectionOf(provider.getPhoneNumber(someCredentials), ProviderError);
    assert.equal(error.category, 'unavailable');
    assert.equal(error.httpStatus, 503);
  });
});

describe('the cloud adapter: Retry-After from usage headers', () => {
  it('a WABA rate limit waits the minutes the business-use-case header estimates', async (t) => {
    const usage = JSON.stringify({
      '456': [{ type: 'whatsapp_business_management', call_count: 100, total_cputime: 10, total_time: 10, estimated_time_to_regain_access: 7 }],
    });
    const base = await startServer(t, (_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json', 'x-business-use-case-usage': usage })
        .end(JSON.stringify({ error: { message: '(#80007) Rate limit issues', type: 'OAuthException', code: 80007, fbtrace_id: 'trace-1' } })),
    );
    const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appSecret: APP_SECRET });
    t.after(() => provider.close());
    const error = await rejectionOf(provider.subscribeApp(someCredentials), ProviderError);
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryAfterSeconds, 420);
    assert.equal(error.traceId, 'trace-1');
    assert.equal(providerErrorToAppError(error).headers['retry-after'], '420');
  });

  it('without a usage estimate, each code falls back to its documented wait', () => {
    assert.equal(retryAfterSeconds(130429, 'throttled', {}), 1);
    assert.equal(retryAfterSeconds(131056, 'throttled', {}), 6);
    assert.equal(retryAfterSeconds(4, 'throttled', { 'x-app-usage': '{"call_count":100,"total_cputime":5,"total_time":5}' }), 60);
    assert.equal(retryAfterSeconds(131057, 'unavailable', {}), 60);
    assert.equal(retryAfterSeconds(131000, 'unavailable', {}), undefined);
    assert.equal(retryAfterSeconds(4, 'throttled', { 'x-app-usage': '{"call_count":100,"estimated_time_to_regain_access":2}' }), 120);
    assert.equal(retryAfterSeconds(131047, 'rejected', { 'retry-after': '30' }), undefined);
    assert.equal(retryAfterSeconds(2, 'unavailable', { 'retry-after': '30' }), 30);
  });
});
