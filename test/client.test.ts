/**
 * The TypeScript client (packages/client) against a real listening server, over HTTP. Where a test
 * needs the network to misbehave (a 503 before the service, an answer lost after it), a proxy on
 * loopback stands between the two and does exactly that, forwarding everything else unchanged.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { before, beforeEach, describe, it } from 'node:test';
import { ApiConnectionError, ApiError, ApiTimeoutError, createClient, type Client, type ClientOptions } from '../packages/client/src/index.ts';
import { verifyWebhook, WebhookVerificationError } from '../packages/client/src/webhooks.ts';
import { startApi } from './fake-api.ts';
import { createConnection, createKey, inbound, newCustomer, settle, startServerWithOwner, type SignedUp } from './factories.ts';
import { suiteScope, type Scope, type TestServer } from './harness.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { waitFor } from './wait.ts';

/** What the proxy does with the next request: forward it, answer it itself, lose the answer, or never answer. */
type Plan =
  { kind: 'forward' } | { kind: 'answer'; status: number; headers: Record<string, string>; body: string } | { kind: 'lose-answer' } | { kind: 'hang' };

/** A proxy on loopback in front of `upstream` (a fake API that forwards), closed when `scope` ends. */
async function startProxy(scope: Scope, upstream: string) {
  const plans: Plan[] = [];
  /** What the upstream answered to each forwarded request, in order. */
  const forwarded: { status: number; headers: Headers }[] = [];
  const api = await startApi(scope);
  api.answer((request, response: ServerResponse) => {
    const plan = plans.shift() ?? { kind: 'forward' };
    if (plan.kind === 'hang') return;
    if (plan.kind === 'answer') return void response.writeHead(plan.status, plan.headers).end(plan.body);
    const headers = Object.entries(request.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)) as [string, string][];
    void fetch(upstream + request.url, { method: request.method, headers, body: request.body === '' ? undefined : request.body })
      .then(async (answer) => {
        const text = await answer.text();
        forwarded.push({ status: answer.status, headers: answer.headers });
        // The service did the work and answered; the client never hears it.
        if (plan.kind === 'lose-answer') return void response.socket?.destroy();
        const passed = [...answer.headers].filter(
          ([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name),
        );
        response.writeHead(answer.status, Object.fromEntries(passed)).end(text);
      })
      .catch(() => response.socket?.destroy());
  });
  const { seen } = api;
  return {
    url: api.url,
    seen,
    forwarded,
    plan: (...next: Plan[]) => void plans.push(...next),
    reset() {
      seen.length = 0;
      forwarded.length = 0;
      plans.length = 0;
    },
  };
}

type Proxy = Awaited<ReturnType<typeof startProxy>>;

describe('the TypeScript client against the service', () => {
  const suite = suiteScope();
  let server: TestServer;
  let owner: SignedUp;
  let proxy: Proxy;
  let connection: { id: string };
  let liveConnection: { id: string };
  let testKey: string;
  let receiver: Receiver;
  /** Every wait the clients asked for, in milliseconds: none of them sleeps for real. */
  let waits: number[];

  function client(options: Partial<ClientOptions> = {}): Client {
    return createClient({
      apiKey: testKey,
      baseUrl: proxy.url,
      sleep: async (milliseconds) => void waits.push(milliseconds),
      random: () => 0.5,
      ...options,
    });
  }

  /** A text to a customer who has just written (so the 24-hour window is open), in a conversation of its own. */
  async function text(body: string) {
    const from = newCustomer();
    await inbound(server, connection as { id: string; phone_number_id: string }, { from });
    return { connection_id: connection.id, to: `+${from}`, type: 'text' as const, text: { body } };
  }

  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    connection = await createConnection(server, owner, { test: true });
    liveConnection = await createConnection(server, owner, { test: false, name: 'Live line' });
    testKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
    proxy = await startProxy(suite, server.url);
    receiver = await startReceiver(suite);
  });

  beforeEach(() => {
    waits = [];
    proxy.reset();
  });

  describe('calls', () => {
    it('sends a message with a generated Idempotency-Key and reads it back by the same namespace', async () => {
      const api = client();
      const sent = await api.messages.create(await text('Your order has shipped'));
      assert.equal(sent.object, 'message');
      assert.equal(sent.status, 'queued');
      const key = proxy.seen[0]!.headers['idempotency-key'];
      assert.match(String(key), /^[0-9a-f-]{36}$/, 'a UUID the client made');
      const read = await api.messages.retrieve(sent.id);
      assert.equal(read.id, sent.id);
      assert.equal(proxy.seen[1]!.headers['idempotency-key'], undefined, 'a GET carries none');
    });

    it('takes the caller’s own Idempotency-Key, and the server replays the first answer for it', async () => {
      const api = client();
      const body = await text('Once only');
      const first = await api.messages.create(body, { idempotencyKey: 'order-1234-shipped' });
      const second = await api.messages.create(body, { idempotencyKey: 'order-1234-shipped' });
      assert.deepEqual(second, first);
      assert.equal(proxy.forwarded[1]!.headers.get('idempotency-replayed'), 'true');
    });

    it('calls any operation by its key, path parameters and query included', async () => {
      const api = client();
      const sent = await api.messages.create(await text('By key'));
      const read = await api.request('GET /v1/messages/{id}', { path: { id: sent.id } });
      assert.equal(read.id, sent.id);
      const page = await api.request('GET /v1/messages', { query: { conversation_id: sent.conversation_id, limit: 1 } });
      assert.deepEqual(
        page.data.map((message) => message.id),
        [sent.id],
      );
    });

    it('knows the key’s mode, and refuses a key of the other mode before any request', () => {
      assert.equal(client().mode, 'test');
      assert.equal(client().credentialKind, 'organization_key');
      assert.equal(client({ apiKey: owner.token }).mode, null);
      assert.throws(() => client({ mode: 'live' }), /live mode, but this credential is test/);
      assert.throws(() => client({ apiKey: 'sk_live_123' }), TypeError);
      assert.equal(proxy.seen.length, 0);
    });
  });

  describe('errors', () => {
    it('are typed, with the envelope’s type, code, param, request id and doc URL', async () => {
      const error = await client()
        .messages.retrieve('msg_not-an-id')
        .then(
          () => assert.fail('expected an error'),
          (thrown: unknown) => thrown,
        );
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 400);
      assert.equal(error.type, 'invalid_request_error');
      assert.equal(error.code, 'validation_failed');
      assert.equal(error.param, '/path/id');
      assert.equal(error.retryable, false);
      assert.match(error.docUrl, /\/docs\/errors\/validation_failed$/);
      assert.equal(error.requestId, proxy.forwarded[0]!.headers.get('x-request-id'));
      assert.equal(proxy.seen.length, 1, 'a validation failure is not retried');
    });

    it('a test key on a live connection is test_key_on_live_connection', async () => {
      await assert.rejects(client().messages.create({ ...(await text('nope')), connection_id: liveConnection.id }), (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 403);
        assert.equal(error.code, 'test_key_on_live_connection');
        return true;
      });
    });
  });

  describe('retries', () => {
    it('retries after a 503 with Retry-After, waiting as it says, with the same Idempotency-Key', async () => {
      proxy.plan({
        kind: 'answer',
        status: 503,
        headers: { 'retry-after': '3', 'content-type': 'application/json' },
        body: JSON.stringify({
          error: {
            type: 'api_error',
            code: 'service_unavailable',
            message: 'The service is restarting.',
            param: null,
            details: [],
            retryable: true,
            doc_url: 'x',
            request_id: 'req_x',
          },
        }),
      });
      const sent = await client().messages.create(await text('After a restart'));
      assert.deepEqual(waits, [3000]);
      assert.equal(proxy.seen.length, 2);
      assert.equal(proxy.seen[0]!.headers['idempotency-key'], proxy.seen[1]!.headers['idempotency-key']);
      const stored = await server.app.store.db.selectFrom('messages').select('id').where('id', '=', sent.id).execute();
      assert.equal(stored.length, 1);
    });

    it('retries when the answer is lost after the server acted, and the server replays it: one message', async () => {
      proxy.plan({ kind: 'lose-answer' });
      const body = await text('Sent exactly once');
      const sent = await client().messages.create(body);
      assert.equal(proxy.seen.length, 2);
      assert.equal(proxy.seen[0]!.headers['idempotency-key'], proxy.seen[1]!.headers['idempotency-key']);
      assert.equal(proxy.forwarded[0]!.status, 201, 'the first attempt was done');
      assert.equal(proxy.forwarded[1]!.headers.get('idempotency-replayed'), 'true', 'the retry is a replay');
      assert.deepEqual(waits, [375], 'backoff: 500 ms scaled by the jitter');
      const messages = await server.app.store.db
        .selectFrom('messages')
        .select('id')
        .where('contact_id', '=', sent.contact_id)
        .where('direction', '=', 'outbound')
        .execute();
      assert.deepEqual(
        messages.map((message) => message.id),
        [sent.id],
      );
    });

    it('backs off exponentially and gives up after maxRetries with the last error', async () => {
      const unavailable = { kind: 'answer', status: 503, headers: { 'content-type': 'text/plain' }, body: 'upstream down' } as const;
      proxy.plan(unavailable, unavailable, unavailable, unavailable);
      await assert.rejects(
        client({ random: () => 0 })
          .messages.list()
          .firstPage(),
        (error: unknown) => {
          assert.equal((error as { status?: number }).status, 503);
          return true;
        },
      );
      assert.deepEqual(waits, [250, 500], 'two retries, half of 500 ms then of 1 s');
      assert.equal(proxy.seen.length, 3);
    });

    it('a lost connection with no retries left is an ApiConnectionError', async () => {
      proxy.plan({ kind: 'lose-answer' });
      await assert.rejects(client({ maxRetries: 0 }).messages.create(await text('lost')), ApiConnectionError);
    });

    it('a call that outlives its timeout is an ApiTimeoutError', async () => {
      proxy.plan({ kind: 'hang' });
      await assert.rejects(client().messages.list({}, { timeout: 100 }).firstPage(), ApiTimeoutError);
    });

    it('a call the caller aborts rejects with the caller’s reason and is not retried', async () => {
      proxy.plan({ kind: 'hang' });
      const controller = new AbortController();
      const call = client().messages.retrieve('msg_01JZ8Q6W3M4T2V9X0B7C5D1E2F', { signal: controller.signal });
      await waitFor(() => proxy.seen.length === 1);
      controller.abort(new Error('the user left'));
      await assert.rejects(call, /the user left/);
      assert.equal(proxy.seen.length, 1);
    });
  });

  describe('lists', () => {
    it('walks every page of a list by its cursors, in order, and back with before', async () => {
      const api = client();
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(await api.messages.create(await text(`Conversation ${i}`)));
      const newestFirst = sent.map((message) => message.conversation_id).reverse();
      proxy.seen.length = 0;
      const walked: string[] = [];
      for await (const conversation of api.conversations.list({ limit: 2, connection_id: connection.id })) walked.push(conversation.id);
      // Other tests wrote earlier conversations on this connection: they come after these five.
      assert.deepEqual(walked.slice(0, 5), newestFirst);
      assert.equal(new Set(walked).size, walked.length, 'no item twice');
      const all = await server.request('GET', `/v1/conversations?limit=100&connection_id=${connection.id}`, { token: testKey });
      assert.deepEqual(
        walked,
        all.body.data.map((conversation: { id: string }) => conversation.id),
      );
      assert.equal(proxy.seen.length, Math.ceil(walked.length / 2), 'one request a page');
      assert.deepEqual(
        proxy.seen.slice(1).map((request) => new URL(request.url, proxy.url).searchParams.get('after')),
        walked.filter((_, index) => index % 2 === 1).slice(0, proxy.seen.length - 1),
        'each page after the previous one’s last item',
      );

      const backward: string[] = [];
      for await (const conversation of api.conversations.list({ limit: 2, connection_id: connection.id, before: walked.at(-1)! }))
        backward.push(conversation.id);
      assert.deepEqual(backward, walked.slice(0, -1).reverse(), 'before the last: everything else, nearest the cursor first');
    });

    it('pages() and toArray() fetch only what they need', async () => {
      const api = client();
      const pages = [];
      for await (const page of api.messages.list({ limit: 1 }).pages()) {
        pages.push(page);
        if (pages.length === 2) break;
      }
      assert.equal(proxy.seen.length, 2);
      assert.equal(pages[1]!.object, 'list');
      proxy.seen.length = 0;
      assert.equal((await api.messages.list({ limit: 2 }).toArray({ max: 3 })).length, 3);
      assert.equal(proxy.seen.length, 2);
    });

    it('a nested list takes its parent’s id first', async () => {
      const api = client({ apiKey: owner.token });
      const sent = await api.messages.create(await text('Noted'));
      const note = await api.conversations.notes.create(sent.conversation_id, { body: 'Called them back' });
      const notes = await api.conversations.notes.list(sent.conversation_id).toArray();
      assert.deepEqual(
        notes.map((item) => item.id),
        [note.id],
      );
    });
  });

  describe('webhooks', () => {
    it('verifies a real delivery and answers the typed event; both secrets during a rotation; 5 minutes either way', async () => {
      const api = client();
      const endpoint = await api.webhookEndpoints.create({ url: receiver.url, events: ['contact.created'] });
      const first = await api.contacts.create({ phone_number: `+${newCustomer()}` });
      await settle(server);
      const delivery = receiver.received.at(-1)!;
      const header = delivery.headers['service-signature'];
      const now = server.clock.now();
      const event = verifyWebhook(delivery.body, header, endpoint.secret, { now });
      assert.ok(event.type === 'contact.created', event.type);
      assert.equal(event.data.object.id, first.id);

      const rotated = await api.webhookEndpoints.rotateSecret(endpoint.id);
      const second = await api.contacts.create({ phone_number: `+${newCustomer()}` });
      await settle(server);
      const during = receiver.received.at(-1)!;
      for (const secrets of [[rotated.secret, endpoint.secret], [rotated.secret], [endpoint.secret]]) {
        const verified = verifyWebhook(during.body, during.headers['service-signature'], secrets, { now });
        assert.ok(verified.type === 'contact.created');
        assert.equal(verified.data.object.id, second.id, 'narrowed by its type to a Contact');
      }
      assert.throws(
        () => verifyWebhook(during.body, during.headers['service-signature'], 'whsec_wrong', { now }),
        (error: unknown) => error instanceof WebhookVerificationError && error.reason === 'no_matching_signature',
      );
      for (const skew of [301_000, -301_000]) {
        assert.throws(
          () => verifyWebhook(during.body, during.headers['service-signature'], rotated.secret, { now: now.getTime() + skew }),
          (error: unknown) => error instanceof WebhookVerificationError && error.reason === 'timestamp_outside_tolerance',
        );
      }
      assert.equal(
        verifyWebhook(during.body, during.headers['service-signature'], rotated.secret, { now: now.getTime() + 299_000 }).id,
        JSON.parse(during.body).id,
      );
      assert.throws(
        () => verifyWebhook(during.body.replace('contact', 'kontact'), during.headers['service-signature'], rotated.secret, { now }),
        WebhookVerificationError,
      );
    });
  });
});
