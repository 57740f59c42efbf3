import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Agent, fetch, type Response } from 'undici';
import { toEnvelope } from '../../events/emit.ts';
import { MINUTE, SECOND } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { startServer, suiteScope, type Scope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, createKey, inbound, settle, signUp, startServerWithOwner, type SignedUp } from '../../../test/factories.ts';
import { startReceiver } from '../../../test/receiver.ts';
import { waitFor } from '../../../test/wait.ts';
import { STREAM_SETTINGS } from './stream.service.ts';

/** One block of the stream, as a reader of the SSE format sees it. */
interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

interface Stream {
  response: Response;
  frames: Frame[];
  /** The envelope frames (those with an id), in the order received. */
  events(): Frame[];
  /** Resolves once a frame matching `predicate` arrived. */
  next(predicate: (frame: Frame) => boolean, what: string): Promise<Frame>;
  /** Resolves once the server ended the body. */
  ended: Promise<void>;
  close(): void;
}

function parseBlock(block: string): Frame {
  const frame: Frame = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    else {
      const colon = line.indexOf(':');
      const field = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') frame.id = value;
      else if (field === 'event') frame.event = value;
      else if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      else if (field === 'retry') frame.retry = Number(value);
    }
  }
  return frame;
}

/** Opens /v1/stream with fetch, as the dashboard does, and reads its frames as they come; closed when `scope` ends. */
async function openStream(
  scope: Scope,
  server: { url: string },
  token: string,
  options: { lastEventId?: string; query?: string; accept?: string } = {},
): Promise<Stream> {
  const controller = new AbortController();
  // A connection of its own, gone with the stream: nothing of it is left for the server's close to wait on.
  const agent = new Agent({ pipelining: 0 });
  const close = () => {
    controller.abort();
    void agent.destroy();
  };
  scope.after(close);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: options.accept ?? 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(`${server.url}/v1/stream${options.query ?? ''}`, { headers, signal: controller.signal, dispatcher: agent });
  const frames: Frame[] = [];
  const ended = (async () => {
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return;
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for await (const chunk of response.body) {
        buffered += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffered.indexOf('\n\n')) !== -1) {
          frames.push(parseBlock(buffered.slice(0, end)));
          buffered = buffered.slice(end + 2);
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  ended.catch(() => undefined);
  return {
    response,
    frames,
    events: () => frames.filter((frame) => frame.id !== undefined),
    next: (predicate, what) => waitFor(() => frames.find(predicate), { message: () => `${what}; frames so far: ${JSON.stringify(frames)}` }),
    ended,
    close,
  };
}

const ofType = (type: string) => (frame: Frame) => frame.event === type;
const withId = (id: string) => (frame: Frame) => frame.id === id;

async function createContact(server: TestServer, token: string, phoneNumber: string): Promise<string> {
  const response = await server.request('POST', '/v1/contacts', { token, body: { phone_number: phoneNumber } });
  assert.equal(response.status, 201, response.text);
  return response.body.id;
}

/** The id of the event that announced `objectId`, read from the table. */
async function eventOf(server: TestServer, organizationId: string, objectId: string): Promise<string> {
  const rows = await server.app.store.db.selectFrom('events').select(['id', 'data']).where('organization_id', '=', organizationId).orderBy('id').execute();
  const row = rows.find((candidate) => (JSON.parse(candidate.data) as { id: string }).id === objectId);
  assert.ok(row, `an event announced ${objectId}`);
  return row.id;
}

let phoneNumbers = 0;
const phoneNumber = () => `+4477009${String(100_000 + (phoneNumbers++ % 900_000))}`;

describe('the live stream', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  describe('format', () => {
    it('answers text/event-stream with no caching or proxy buffering, the request id and rate-limit headers, and a retry field first', async (t) => {
      const stream = await openStream(t, server, owner.token);
      assert.equal(stream.response.status, 200);
      assert.equal(stream.response.headers.get('content-type'), 'text/event-stream');
      assert.equal(stream.response.headers.get('cache-control'), 'no-cache');
      assert.equal(stream.response.headers.get('x-accel-buffering'), 'no');
      assert.match(stream.response.headers.get('x-request-id') ?? '', /^req_/);
      assert.match(stream.response.headers.get('x-ratelimit-limit') ?? '', /^\d+$/);
      const first = await stream.next(() => true, 'a first frame');
      assert.deepEqual(first, { retry: STREAM_SETTINGS.retryMs });
    });

    it('sends an event a request emits as id, type and the envelope, byte for byte what a webhook delivery carries', async (t) => {
      const receiver = await startReceiver(t);
      const key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
      const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: key, body: { url: receiver.url, events: ['contact.created'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const stream = await openStream(t, server, owner.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');

      const contactId = await createContact(server, owner.token, phoneNumber());
      const eventId = await eventOf(server, owner.organizationId, contactId);
      const frame = await stream.next(withId(eventId), 'the contact.created event');
      assert.equal(frame.event, 'contact.created');
      const row = await server.app.store.db.selectFrom('events').selectAll().where('id', '=', eventId).executeTakeFirstOrThrow();
      assert.equal(frame.data, JSON.stringify(toEnvelope(row)));

      await settle(server);
      const delivered = receiver.received.find((request) => request.headers['service-event-id'] === eventId);
      assert.ok(delivered, 'the webhook delivery of the same event');
      assert.equal(frame.data, delivered.body);
      assert.equal((await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.body.id}`, { token: key })).status, 200);
    });

    it('sends an inbound message as message.received once the worker has processed the provider webhook', async (t) => {
      const connection = await createConnection(server, owner);
      const stream = await openStream(t, server, owner.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      const message = await inbound(server, connection, { text: 'hello from the stream' });
      const frame = await stream.next(
        (candidate) =>
          candidate.event === 'message.received' && (JSON.parse(candidate.data!) as { data: { object: { id: string } } }).data.object.id === message.id,
        'the message.received event',
      );
      const envelope = JSON.parse(frame.data!) as { id: string; connection_id: string; organization_id: string };
      assert.equal(envelope.id, frame.id);
      assert.equal(envelope.connection_id, connection.id);
      assert.equal(envelope.organization_id, owner.organizationId);
    });

    it('sends a heartbeat comment once nothing has been written for the heartbeat interval', async (t) => {
      const stream = await openStream(t, server, owner.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      server.clock.advance(STREAM_SETTINGS.heartbeatMs);
      await stream.next((frame) => frame.comment === 'heartbeat', 'a heartbeat');
    });
  });

  describe('resuming', () => {
    it('Last-Event-ID replays exactly the events missed since, in order, then goes on live', async (t) => {
      const first = await openStream(t, server, owner.token);
      const seenId = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await first.next(withId(seenId), 'the event seen before the disconnect');
      first.close();

      const missed = [
        await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber())),
        await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber())),
      ];
      const resumed = await openStream(t, server, owner.token, { lastEventId: seenId });
      await resumed.next(withId(missed[1]!), 'the last missed event');
      assert.deepEqual(
        resumed.events().map((frame) => frame.id),
        missed,
      );

      const live = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await resumed.next(withId(live), 'a live event after the replay');
      assert.deepEqual(
        resumed.events().map((frame) => frame.id),
        [...missed, live],
      );
    });

    it('takes the resume point from last_event_id when no header is sent, and the header when both are', async (t) => {
      const before = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      const after = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));

      const byQuery = await openStream(t, server, owner.token, { query: `?last_event_id=${before}` });
      await byQuery.next(withId(after), 'the event after the query parameter');
      assert.deepEqual(
        byQuery.events().map((frame) => frame.id),
        [after],
      );

      const both = await openStream(t, server, owner.token, { query: `?last_event_id=${before}`, lastEventId: after });
      const later = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await both.next(withId(later), 'the live event');
      assert.deepEqual(
        both.events().map((frame) => frame.id),
        [later],
        'nothing before the header',
      );
    });

    it('a well-formed id of no event of this organization starts from now with stream.reset, and replays nothing', async (t) => {
      const stream = await openStream(t, server, owner.token, { lastEventId: newId('event') });
      const reset = await stream.next(ofType('stream.reset'), 'stream.reset');
      assert.equal(reset.id, undefined, 'a control event leaves Last-Event-ID as it was');
      assert.equal((JSON.parse(reset.data!) as { reason: string }).reason, 'unknown_event_id');
      const live = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await stream.next(withId(live), 'a live event');
      assert.deepEqual(
        stream.events().map((frame) => frame.id),
        [live],
      );
    });

    it('more missed events than a replay holds starts from now with stream.reset', async (t) => {
      const other = await signUp(server, { organizationName: 'Busy' });
      const resumeFrom = await eventOf(server, other.organizationId, await createContact(server, other.token, phoneNumber()));
      const at = server.clock.now();
      const rows = Array.from({ length: STREAM_SETTINGS.replayLimit + 1 }, () => ({
        id: newId('event', at.getTime()),
        organization_id: other.organizationId,
        connection_id: null,
        type: 'contact.updated',
        data: '{"id":"ct_busy","object":"contact"}',
        previous_attributes: '{}',
        created_at: at.toISOString(),
      }));
      await server.app.store.db.insertInto('events').values(rows).execute();

      const stream = await openStream(t, server, other.token, { lastEventId: resumeFrom });
      const reset = await stream.next(ofType('stream.reset'), 'stream.reset');
      assert.equal((JSON.parse(reset.data!) as { reason: string }).reason, 'too_many_missed');
      const live = await eventOf(server, other.organizationId, await createContact(server, other.token, phoneNumber()));
      await stream.next(withId(live), 'a live event');
      assert.deepEqual(
        stream.events().map((frame) => frame.id),
        [live],
      );
    });
  });

  describe('refusals before the stream starts', () => {
    it('a malformed Last-Event-ID or last_event_id is validation_failed naming it', async () => {
      const headers = { accept: 'text/event-stream' };
      const byHeader = assertError(
        await server.request('GET', '/v1/stream', { token: owner.token, headers: { ...headers, 'last-event-id': 'evt_nope' } }),
        400,
        'validation_failed',
      );
      assert.equal(byHeader.param, '/header/last-event-id');
      const byQuery = assertError(await server.request('GET', '/v1/stream?last_event_id=42', { token: owner.token, headers }), 400, 'validation_failed');
      assert.equal(byQuery.param, '/query/last_event_id');
      const unknown = assertError(await server.request('GET', '/v1/stream?since=now', { token: owner.token, headers }), 400, 'validation_failed');
      assert.equal(unknown.param, '/query/since');
    });

    it('a request that does not accept text/event-stream is validation_failed on the Accept header', async () => {
      for (const accept of [undefined, 'application/json', '*/*']) {
        const response = await server.request('GET', '/v1/stream', { token: owner.token, ...(accept ? { headers: { accept } } : {}) });
        assert.equal(assertError(response, 400, 'validation_failed').param, '/header/accept', String(accept));
      }
    });

    it('API keys are refused: the stream is for dashboard tokens', async () => {
      const connection = await createConnection(server, owner);
      for (const body of [
        { kind: 'organization', mode: 'live' },
        { kind: 'connection', mode: 'live', connection_id: connection.id },
      ] as const) {
        const key = (await createKey(server, owner.token, body)).key;
        const response = await server.request('GET', '/v1/stream', { token: key, headers: { accept: 'text/event-stream' } });
        assert.deepEqual(assertError(response, 403, 'credential_kind_not_allowed').allowed_credentials, ['dashboard_token']);
      }
    });

    it('HEAD is not a way to open one', async () => {
      const response = await server.request('HEAD', '/v1/stream', { token: owner.token, headers: { accept: 'text/event-stream' } });
      assert.ok(response.status === 404 || response.status === 405, String(response.status));
    });
  });

  describe('who sees what', () => {
    it("another organization's events never appear, and its event id resumes nothing", async (t) => {
      const other = await signUp(server, { organizationName: 'Other' });
      const mine = await openStream(t, server, owner.token);
      const theirs = await openStream(t, server, other.token);
      const otherEvent = await eventOf(server, other.organizationId, await createContact(server, other.token, phoneNumber()));
      const myEvent = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await theirs.next(withId(otherEvent), "the other organization's own event");
      await mine.next(withId(myEvent), 'my event');
      const afterOther = await eventOf(server, other.organizationId, await createContact(server, other.token, phoneNumber()));
      await theirs.next(withId(afterOther), "the other organization's next event");
      const myNext = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await mine.next(withId(myNext), 'my next event');

      const organizations = (stream: Stream) =>
        new Set(stream.events().map((frame) => (JSON.parse(frame.data!) as { organization_id: string }).organization_id));
      assert.deepEqual(organizations(mine), new Set([owner.organizationId]));
      assert.deepEqual(organizations(theirs), new Set([other.organizationId]));

      const resumed = await openStream(t, server, owner.token, { lastEventId: otherEvent });
      const reset = await resumed.next(ofType('stream.reset'), 'stream.reset for a foreign id');
      assert.equal((JSON.parse(reset.data!) as { reason: string }).reason, 'unknown_event_id');
      const live = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await resumed.next(withId(live), 'a live event');
      assert.deepEqual(
        resumed.events().map((frame) => frame.id),
        [live],
        "no event of either organization before the foreign id's reset",
      );
    });

    it('a viewer streams the events of the organization', async (t) => {
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const stream = await openStream(t, server, viewer.token);
      const eventId = await eventOf(server, owner.organizationId, await createContact(server, owner.token, phoneNumber()));
      await stream.next(withId(eventId), "the owner's change, seen by the viewer");
    });
  });

  describe('across processes', () => {
    it('an event written by a second process on the same store reaches a stream of the first', async (t) => {
      const second = await startServer(t, { shareStore: server.testStore, clock: server.clock });
      const stream = await openStream(t, server, owner.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      // Written through the second process's API: nothing of it passes through the first process.
      const contactId = await createContact(second, owner.token, phoneNumber());
      const eventId = await eventOf(server, owner.organizationId, contactId);
      const frame = await stream.next(withId(eventId), "the second process's event");
      assert.equal(frame.event, 'contact.created');
    });
  });

  describe('limits and metering', () => {
    it("takes one token of the credential's bucket when it opens, and none while it lasts", async (t) => {
      const redisUrl = process.env.TEST_REDIS_URL;
      const { server: own, owner: person } = await startServerWithOwner(t, {
        env: redisUrl ? { REDIS_URL: redisUrl, RATE_LIMIT_KEY_PREFIX: `stream-${newId('request')}` } : {},
      });
      const stream = await openStream(t, own, person.token);
      const atOpen = Number(stream.response.headers.get('x-ratelimit-remaining'));
      assert.equal(stream.response.headers.get('x-ratelimit-limit'), '400');
      const eventId = await eventOf(own, person.organizationId, await createContact(own, person.token, phoneNumber()));
      await stream.next(withId(eventId), 'an event delivered while it lasts');
      const next = await own.request('GET', '/v1/identity', { token: person.token });
      assert.equal(next.status, 200, next.text);
      const remaining = Number(next.headers.get('x-ratelimit-remaining'));
      // Memory buckets refill on the service's clock, which stands still here; Redis's on its own.
      if (redisUrl) assert.ok(remaining < 400, String(remaining));
      else assert.equal(remaining, atOpen - 2, 'the contact created and this request: the stream took nothing more');
    });

    it('counts a stream as one API request, whether the client or the server ends it', async (t) => {
      const { server: own, owner: person } = await startServerWithOwner(t);
      const apiRequests = async () => {
        await own.app.services.usage.flushRequests();
        const response = await own.request('GET', '/v1/usage', { token: person.token });
        assert.equal(response.status, 200, response.text);
        return (response.body as { meters: { meter: string; quantity: number }[] }).meters.find((row) => row.meter === 'api_requests')!.quantity;
      };
      const before = await apiRequests();
      const leftByClient = await openStream(t, own, person.token);
      await leftByClient.next((frame) => frame.retry !== undefined, 'the retry field');
      leftByClient.close();
      await waitFor(() => own.app.services.stream.stats().streams === 0, { message: 'the stream forgotten' });
      assert.equal(await apiRequests(), before + 2, 'the usage read before, and the stream');

      const endedByServer = await openStream(t, own, person.token);
      await endedByServer.next((frame) => frame.retry !== undefined, 'the retry field');
      own.clock.advance(15 * MINUTE);
      await endedByServer.ended;
      const login = await own.request('POST', '/auth/login', { body: { email: person.email, password: person.password } });
      person.token = login.body.token;
      assert.equal(await apiRequests(), before + 4, 'and since: the usage read in between, and the stream (a login is no API request)');
    });
  });

  describe('lifetime', () => {
    it('frees the stream and stops the poller when the client goes away', async (t) => {
      const streams = server.app.services.stream;
      await waitFor(() => streams.stats().streams === 0, { message: 'earlier streams closed' });
      const one = await openStream(t, server, owner.token);
      const two = await openStream(t, server, owner.token);
      await one.next((frame) => frame.retry !== undefined, 'the first stream open');
      await two.next((frame) => frame.retry !== undefined, 'the second stream open');
      assert.deepEqual(streams.stats(), { streams: 2, polling: true });
      one.close();
      await waitFor(() => streams.stats().streams === 1, { message: 'one stream left' });
      assert.equal(streams.stats().polling, true);
      two.close();
      await waitFor(() => !streams.stats().polling && streams.stats().streams === 0, {
        message: () => `the poller stopped: ${JSON.stringify(streams.stats())}`,
      });
    });

    it('ends with stream.expired when the dashboard token expires', async (t) => {
      const { server: own, owner: person } = await startServerWithOwner(t);
      const stream = await openStream(t, own, person.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      own.clock.advance(15 * MINUTE + SECOND);
      const expired = await stream.next(ofType('stream.expired'), 'stream.expired');
      assert.equal(expired.id, undefined);
      assert.equal((JSON.parse(expired.data!) as { reason: string }).reason, 'credential_expired');
      await stream.ended;
      assert.equal(stream.frames.at(-1), expired, 'the last frame');
      await waitFor(() => own.app.services.stream.stats().streams === 0, { message: 'the stream forgotten' });
    });

    it('ends with stream.expired within a credential check when the session is logged out', async (t) => {
      const { server: own, owner: person } = await startServerWithOwner(t);
      const stream = await openStream(t, own, person.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      assert.equal((await own.request('POST', '/auth/logout', { token: person.token })).status, 200);
      own.clock.advance(STREAM_SETTINGS.recheckMs);
      const expired = await stream.next(ofType('stream.expired'), 'stream.expired');
      assert.equal((JSON.parse(expired.data!) as { reason: string }).reason, 'credential_revoked');
      await stream.ended;
    });

    it('ends every stream with stream.closed when the server closes, without holding the close up', async (t) => {
      const { server: own, owner: person } = await startServerWithOwner(t);
      const stream = await openStream(t, own, person.token);
      await stream.next((frame) => frame.retry !== undefined, 'the retry field');
      await own.close();
      const closed = await stream.next(ofType('stream.closed'), 'stream.closed');
      assert.equal((JSON.parse(closed.data!) as { reason: string }).reason, 'server_closing');
      await stream.ended;
      assert.deepEqual(own.app.services.stream.stats(), { streams: 0, polling: false });
    });
  });
});
