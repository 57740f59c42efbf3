import assert from 'node:assert/strict';
import { before, beforeEach, describe, it, type TestContext } from 'node:test';
import { DAY, HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { verifyWebhookSignature } from '../../events/webhook-signature.ts';
import { EVENT_TYPE_NAMES } from '../../events/event-types.schemas.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { webhookDelivery } from '../../jobs/catalog.ts';
import { createWorker } from '../../jobs/worker.ts';
import { ENDPOINT_CACHE_TTL_MS } from './webhook-endpoints.service.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { waitFor } from '../../../test/wait.ts';
import { assertError, createConnection, createKey, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

const silent = { error: () => undefined, warn: () => undefined };

describe('webhook endpoints', () => {
  let server: TestServer;
  let owner: SignedUp;
  let receiver: Receiver;
  let apiKey: string;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    receiver = await startReceiver(suite);
    // Tests move the clock by days, so they call the API with a key (which does not expire) and
    // log in afresh only to read the audit log.
    apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });
  beforeEach(async () => {
    for (const endpoint of (await server.request('GET', '/v1/webhook-endpoints?limit=100', { token: apiKey })).body.data) {
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    }
    await server.app.worker.drain();
    receiver.received.length = 0;
    receiver.respond(200);
  });
  const auditLog = async (query: string) => {
    const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
    return server.request('GET', `/v1/events?${query}`, { token: login.body.token });
  };

  const createEndpoint = async (body: Record<string, unknown> = {}) => {
    const response = await server.request('POST', '/v1/webhook-endpoints', {
      token: apiKey,
      body: { url: receiver.url, events: ['contact.created'], ...body },
    });
    assert.equal(response.status, 201, response.text);
    return response.body as { id: string; secret: string };
  };
  const emit = (type: 'contact.created' | 'contact.updated', connectionId: string | null = null, extra: Record<string, unknown> = {}) =>
    server.app.store.db.transaction().execute((trx) =>
      server.app.services.events.emit(trx, {
        type,
        organizationId: owner.organizationId,
        connectionId,
        object: { id: 'ct_1', object: 'contact', name: 'Ada' },
        ...extra,
      }),
    );
  const deliver = () => server.app.worker.drain();

  describe('managing endpoints', () => {
    it('create returns the secret once; get and list never do', async () => {
      const created = await createEndpoint({ description: 'CRM' });
      assert.match(created.secret, /^whsec_/);
      const one = await server.request('GET', `/v1/webhook-endpoints/${created.id}`, { token: apiKey });
      assert.equal(one.body.secret, undefined);
      assert.equal(one.body.status, 'enabled');
      const list = await server.request('GET', '/v1/webhook-endpoints', { token: apiKey });
      assert.ok(list.body.data.some((e: { id: string }) => e.id === created.id));
      assert.ok(!list.text.includes(created.secret));
      const row = await server.app.store.db.selectFrom('webhook_endpoints').select('secret').where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.ok(!row.secret.includes(created.secret), 'the secret is encrypted at rest');
    });

    it('update changes the URL and events; delete removes it', async () => {
      const created = await createEndpoint();
      const updated = await server.request('PATCH', `/v1/webhook-endpoints/${created.id}`, {
        token: apiKey,
        body: { events: ['contact.updated', 'message.status'], url: `${receiver.url}/v2` },
      });
      assert.equal(updated.status, 200);
      assert.deepEqual(updated.body.events, ['contact.updated', 'message.status']);
      assert.equal(updated.body.url, `${receiver.url}/v2`);
      const deleted = await server.request('DELETE', `/v1/webhook-endpoints/${created.id}`, { token: apiKey });
      assert.deepEqual(deleted.body, { id: created.id, object: 'webhook_endpoint', deleted: true });
      assertError(await server.request('GET', `/v1/webhook-endpoints/${created.id}`, { token: apiKey }), 404, 'resource_not_found');
    });

    it('is in the audit log', async () => {
      const created = await createEndpoint();
      const events = await auditLog(`target_id=${created.id}`);
      assert.equal(events.body.data[0].action, 'webhook_endpoint.created');
    });
  });

  describe('bad input', () => {
    for (const [name, url] of [
      ['not a URL', 'not a url'],
      ['ftp://', 'ftp://example.com/hooks'],
      ['userinfo', 'https://user:secret@example.com/hooks'],
    ] as const) {
      it(`a URL that is ${name} is refused`, async () => {
        const response = await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url, events: ['contact.created'] } });
        assert.ok([400].includes(response.status), response.text);
        assert.equal(response.body.error.param, '/url');
      });
    }

    it('unknown or empty event lists are validation_failed', async () => {
      const unknown = assertError(
        await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['contact.created', 'contact.exploded'] } }),
        400,
        'validation_failed',
      );
      assert.equal(unknown.param, '/events/1');
      assertError(await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: [] } }), 400, 'validation_failed');
      const repeated = assertError(
        await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['ping', 'ping'] } }),
        400,
        'validation_failed',
      );
      assert.equal(repeated.param, '/events');
      const created = await createEndpoint({ events: ['ping'] });
      const patched = assertError(
        await server.request('PATCH', `/v1/webhook-endpoints/${created.id}`, { token: apiKey, body: { events: ['ping', 'contact.exploded'] } }),
        400,
        'validation_failed',
      );
      assert.equal(patched.param, '/events/1');
      const starAndMore = assertError(
        await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['contact.created', '*'] } }),
        400,
        'validation_failed',
      );
      assert.equal(starAndMore.param, '/events/1');
      const patchedStar = assertError(
        await server.request('PATCH', `/v1/webhook-endpoints/${created.id}`, { token: apiKey, body: { events: ['*', 'ping'] } }),
        400,
        'validation_failed',
      );
      assert.equal(patchedStar.param, '/events/0');
    });

    it("another organization's connection is resource_not_found on /connection_id", async () => {
      const stranger = await signUp(server);
      const theirs = await createConnection(server, stranger);
      const error = assertError(
        await server.request('POST', '/v1/webhook-endpoints', {
          token: apiKey,
          body: { url: receiver.url, events: ['contact.created'], connection_id: theirs.id },
        }),
        404,
        'resource_not_found',
      );
      assert.equal(error.param, '/connection_id');
    });

    it("another organization's endpoint is 404 on every operation", async () => {
      const stranger = await signUp(server);
      const theirs = await server.request('POST', '/v1/webhook-endpoints', { token: stranger.token, body: { url: receiver.url, events: ['contact.created'] } });
      for (const [method, path] of [
        ['GET', ''],
        ['PATCH', ''],
        ['DELETE', ''],
        ['POST', '/test'],
        ['POST', '/rotate-secret'],
        ['GET', '/deliveries'],
      ] as const) {
        const response = await server.request(method, `/v1/webhook-endpoints/${theirs.body.id}${path}`, {
          token: apiKey,
          ...(method === 'PATCH' ? { body: { events: ['contact.created'] } } : {}),
        });
        assertError(response, 404, 'resource_not_found');
      }
    });
  });

  describe('delivery', () => {
    it('delivers the event envelope, signed over the exact bytes sent', async () => {
      const endpoint = await createEndpoint();
      const event = await emit('contact.created');
      assert.equal(await deliver(), 1);
      assert.equal(receiver.received.length, 1);
      const [request] = receiver.received;
      const body = JSON.parse(request!.body);
      assert.deepEqual(Object.keys(body).sort(), ['api_version', 'connection_id', 'created_at', 'data', 'id', 'object', 'organization_id', 'type']);
      assert.equal(body.id, event.id);
      assert.equal(body.object, 'event');
      assert.equal(body.api_version, 'v1');
      assert.equal(body.data.object.name, 'Ada');
      const verified = verifyWebhookSignature(request!.body, request!.headers['service-signature'] as string, endpoint.secret, { now: server.clock.now() });
      assert.equal(verified.valid, true);
      assert.equal(
        verifyWebhookSignature(request!.body + ' ', request!.headers['service-signature'] as string, endpoint.secret, { now: server.clock.now() }).valid,
        false,
      );
      const deliveries = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { token: apiKey });
      assert.equal(deliveries.body.data[0].status, 'succeeded');
      assert.equal(deliveries.body.data[0].response_status, 200);
      assert.equal(deliveries.body.data[0].attempt, 1);
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });

    it('previous_attributes travel only on *.updated events', async () => {
      const endpoint = await createEndpoint({ events: ['contact.updated'] });
      await emit('contact.updated', null, { previousAttributes: { name: 'Adda' } });
      await deliver();
      assert.deepEqual(JSON.parse(receiver.received[0]!.body).previous_attributes, { name: 'Adda' });
      await assert.rejects(emit('contact.created', null, { previousAttributes: { name: 'x' } }));
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });

    it('matches on event type and connection', async () => {
      const mine = await createConnection(server, owner);
      const other = await createConnection(server, owner);
      const scoped = await createEndpoint({ connection_id: mine.id, url: `${receiver.url}/scoped` });
      const everything = await createEndpoint({ url: `${receiver.url}/all`, events: [...EVENT_TYPE_NAMES] });
      await emit('contact.created', mine.id);
      await emit('contact.created', other.id);
      await emit('contact.updated', mine.id);
      await deliver();
      const paths = receiver.received.map((r) => `${JSON.parse(r.body).type}@${JSON.parse(r.body).connection_id === mine.id ? 'mine' : 'other'}`);
      assert.equal(receiver.received.length, 4);
      assert.equal(paths.filter((p) => p === 'contact.created@mine').length, 2);
      for (const id of [scoped.id, everything.id]) await server.request('DELETE', `/v1/webhook-endpoints/${id}`, { token: apiKey });
    });

    it("reads an event this process emitted from memory, and another process's once for a whole fan-out, sending the same bytes", async (t) => {
      let eventReads = 0;
      const counted = await startServer(t, { onQuery: (sql) => void (/^select \* from "events"/.test(sql) && eventReads++) });
      // Another process on the same database, which emits while this one delivers.
      const emitter = await startServer(t, { shareStore: counted.testStore, clock: counted.clock });
      const team = await signUp(counted);
      for (let n = 0; n < 5; n++) {
        const created = await counted.request('POST', '/v1/webhook-endpoints', {
          token: team.token,
          body: { url: `${receiver.url}/fan-${n}`, events: ['contact.created'] },
        });
        assert.equal(created.status, 201, created.text);
      }
      const emitIn = (where: typeof counted, id: string) =>
        where.app.store.db.transaction().execute((trx) =>
          where.app.services.events.emit(trx, {
            type: 'contact.created',
            organizationId: team.organizationId,
            connectionId: null,
            object: { id, object: 'contact', name: 'Ada "the first" Lovelace', tags: ['vip'], metadata: { ü: 1 } },
          }),
        );
      const bodiesOf = (eventId: string) => receiver.received.filter((r) => r.path.includes('/fan-') && JSON.parse(r.body).id === eventId).map((r) => r.body);

      // Claimed and started together, before any read of their event returns: they share the one read.
      const fromElsewhere = await emitIn(emitter, 'ct_1');
      eventReads = 0;
      await counted.app.worker.drain();
      assert.equal(bodiesOf(fromElsewhere.id).length, 5);
      assert.equal(eventReads, 1);

      const fromHere = await emitIn(counted, 'ct_2');
      eventReads = 0;
      await counted.app.worker.drain();
      assert.equal(eventReads, 0, 'kept when its deliveries were queued');
      const stored = await counted.app.services.events.find(counted.app.store.db, team.organizationId, fromHere.id);
      assert.deepEqual(new Set(bodiesOf(fromHere.id)), new Set([JSON.stringify(stored)]), 'the bytes a store read would have sent');

      // Kept only until its deliveries here have run: their retries, much later, read it back (once).
      receiver.respond(503);
      const failing = await emitIn(counted, 'ct_3');
      eventReads = 0;
      await counted.app.worker.drain();
      assert.equal(eventReads, 0);
      receiver.respond(200);
      counted.clock.advance(6 * SECOND);
      await counted.app.worker.drain();
      assert.equal(eventReads, 1, 'let go once its five deliveries had run');
      assert.deepEqual(
        new Set(bodiesOf(failing.id)),
        new Set([JSON.stringify(await counted.app.services.events.find(counted.app.store.db, team.organizationId, failing.id))]),
      );
      assert.equal(bodiesOf(failing.id).length, 10, 'five failed attempts, five retries');
    });

    it('["*"] receives every type, stored as such so that types added later reach it too; never pings', async () => {
      const all = await createEndpoint({ url: `${receiver.url}/star`, events: ['*'] });
      const shown = await server.request('GET', `/v1/webhook-endpoints/${all.id}`, { token: apiKey });
      assert.deepEqual(shown.body.events, ['*']);
      const stored = await server.app.store.db.selectFrom('webhook_endpoints').select('events').where('id', '=', all.id).executeTakeFirstOrThrow();
      assert.equal(stored.events, '["*"]');
      await emit('contact.created');
      await emit('contact.updated');
      await server.request('POST', `/v1/webhook-endpoints/${all.id}/test`, { token: apiKey });
      const other = await createEndpoint({ url: `${receiver.url}/other`, events: ['contact.created'] });
      await server.request('POST', `/v1/webhook-endpoints/${other.id}/test`, { token: apiKey });
      await deliver();
      const atStar = receiver.received.filter((r) => r.path === '/hooks/star').map((r) => JSON.parse(r.body).type);
      assert.deepEqual(atStar.sort(), ['contact.created', 'contact.updated', 'ping'], 'its own test only');
    });

    it('retries on the schedule, with the same event id, until the receiver answers 2xx', async () => {
      const endpoint = await createEndpoint();
      receiver.respond(503);
      const event = await emit('contact.created');
      await deliver();
      let deliveries = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { token: apiKey });
      const first = deliveries.body.data[0];
      assert.equal(first.status, 'failed');
      assert.equal(first.response_status, 503);
      const wait = new Date(first.next_retry_at).getTime() - server.clock.now().getTime();
      assert.ok(wait >= 4.5 * SECOND && wait <= 5.5 * SECOND, `first retry after about 5 s, got ${wait}`);
      server.clock.advance(4 * SECOND);
      assert.equal(await deliver(), 0, 'not before its time');
      server.clock.advance(2 * SECOND);
      await deliver();
      server.clock.advance(33 * SECOND);
      receiver.respond(200);
      await deliver();
      deliveries = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?order=asc`, { token: apiKey });
      assert.deepEqual(
        deliveries.body.data.map((d: { attempt: number; status: string }) => `${d.attempt}:${d.status}`),
        ['1:failed', '2:failed', '3:succeeded'],
      );
      assert.ok(receiver.received.every((r) => JSON.parse(r.body).id === event.id));
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });

    it('gives up after the eighth retry', async () => {
      const endpoint = await createEndpoint();
      receiver.respond(500);
      await emit('contact.created');
      for (let i = 0; i < 12; i++) {
        await deliver();
        server.clock.advance(27 * HOUR);
      }
      assert.equal(receiver.received.length, 9);
      const deliveries = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100`, { token: apiKey });
      assert.equal(deliveries.body.data[0].next_retry_at, null);
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });
  });

  describe("the delivery job's endpoint cache", () => {
    const lastSignatures = () => (receiver.received.at(-1)!.headers['service-signature'] as string).match(/v1=/g)?.length;

    it('a rotation, a new URL or a disable made in this process applies to the very next delivery', async () => {
      const endpoint = await createEndpoint();
      await emit('contact.created');
      await deliver();
      assert.equal(lastSignatures(), 1);
      assert.equal((await server.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { token: apiKey })).status, 200);
      await emit('contact.created');
      await deliver();
      assert.equal(lastSignatures(), 2, 'signed with both secrets at once, not after the cache ran out');

      const elsewhere = await startReceiver(suite);
      assert.equal((await server.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey, body: { url: elsewhere.url } })).status, 200);
      await emit('contact.created');
      await deliver();
      assert.equal(elsewhere.received.length, 1);
      assert.equal(receiver.received.length, 2);

      // Queued while enabled, disabled before it runs.
      await emit('contact.created');
      assert.equal((await server.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey, body: { status: 'disabled' } })).status, 200);
      await deliver();
      assert.equal(elsewhere.received.length, 1);
    });

    it(`a change made by another process is used within ${ENDPOINT_CACHE_TTL_MS} ms`, async () => {
      const endpoint = await createEndpoint();
      await emit('contact.created');
      await deliver();
      const elsewhere = await startReceiver(suite);
      // What another process's PATCH leaves in the table; this process's cache does not hear of it.
      await server.app.store.db.updateTable('webhook_endpoints').set({ url: elsewhere.url }).where('id', '=', endpoint.id).execute();
      await emit('contact.created');
      await deliver();
      assert.equal(receiver.received.length, 2, 'within the cache time the endpoint is not read again');
      server.clock.advance(ENDPOINT_CACHE_TTL_MS);
      await emit('contact.created');
      await deliver();
      assert.equal(elsewhere.received.length, 1);
    });
  });

  describe('a worker lost mid-delivery', () => {
    const LEASE_MS = MINUTE;
    const history = async (endpointId: string) =>
      (await server.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?order=asc`, { token: apiKey })).body.data.map(
        (d: { attempt: number; status: string; error: string | null }) => `${d.attempt}:${d.status}:${d.error}`,
      );

    /**
     * A worker that claims the delivery and never finishes it: what a process killed mid-send leaves,
     * its job running under a lease nobody will renew. Concurrency 1 keeps it from claiming again.
     */
    async function loseTheAttempt(t: TestContext): Promise<void> {
      const { db, commitWithRequests } = server.app.store;
      const lost = createWorker({
        db,
        commitWithRequests,
        clock: server.clock,
        log: silent,
        leaseMs: LEASE_MS,
        concurrency: 1,
        catalog: [webhookDelivery],
      });
      lost.register(webhookDelivery, () => new Promise<void>(() => undefined));
      t.after(() => lost.stop(0));
      lost.start();
      await waitFor(
        async () =>
          (await db.selectFrom('jobs').select('id').where('name', '=', webhookDelivery.name).where('locked_by', '=', lost.id).executeTakeFirst()) !== undefined,
        { message: 'the lost worker to claim the delivery' },
      );
    }

    it('its attempt is closed as failed with worker_lost once the lease ends, before the attempt that succeeds', async (t) => {
      const endpoint = await createEndpoint();
      await emit('contact.created');
      await loseTheAttempt(t);
      assert.equal(await deliver(), 0, 'the lease still holds');
      assert.deepEqual(await history(endpoint.id), []);
      server.clock.advance(LEASE_MS + 1);
      assert.equal(await deliver(), 1);
      assert.equal(receiver.received.length, 1);
      assert.deepEqual(await history(endpoint.id), ['1:failed:worker_lost', '2:succeeded:null']);
    });

    it('its attempt is closed even when the endpoint was disabled before the lease ended', async (t) => {
      const endpoint = await createEndpoint();
      await emit('contact.created');
      await loseTheAttempt(t);
      assert.equal((await server.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey, body: { status: 'disabled' } })).status, 200);
      server.clock.advance(LEASE_MS + 1);
      assert.equal(await deliver(), 1);
      assert.equal(receiver.received.length, 0, 'a disabled endpoint gets no further attempt');
      assert.deepEqual(await history(endpoint.id), ['1:failed:worker_lost']);
    });
  });

  describe('secret rotation', () => {
    it('both secrets sign for 24 hours, then only the new one', async () => {
      const endpoint = await createEndpoint();
      const rotated = await server.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { token: apiKey });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.secret, endpoint.secret);
      await emit('contact.created');
      await deliver();
      let header = receiver.received.at(-1)!.headers['service-signature'] as string;
      assert.equal(header.match(/v1=/g)?.length, 2);
      for (const secret of [endpoint.secret, rotated.body.secret]) {
        assert.equal(verifyWebhookSignature(receiver.received.at(-1)!.body, header, secret, { now: server.clock.now() }).valid, true);
      }
      server.clock.advance(DAY);
      await emit('contact.created');
      await deliver();
      header = receiver.received.at(-1)!.headers['service-signature'] as string;
      assert.equal(header.match(/v1=/g)?.length, 1);
      assert.equal(verifyWebhookSignature(receiver.received.at(-1)!.body, header, endpoint.secret, { now: server.clock.now() }).valid, false);
      assert.equal(verifyWebhookSignature(receiver.received.at(-1)!.body, header, rotated.body.secret, { now: server.clock.now() }).valid, true);
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });
  });

  describe('test and replay', () => {
    it('test sends a ping now and reports the status, time and an excerpt', async () => {
      const endpoint = await createEndpoint();
      const response = await server.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { token: apiKey });
      assert.equal(response.status, 200);
      assert.equal(response.body.success, true);
      assert.equal(response.body.status_code, 200);
      assert.equal(response.body.response_excerpt, 'ok');
      assert.equal(typeof response.body.duration_ms, 'number');
      assert.equal(JSON.parse(receiver.received[0]!.body).type, 'ping');
      receiver.respond(418);
      const failed = await server.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { token: apiKey });
      assert.equal(failed.body.success, false);
      assert.equal(failed.body.status_code, 418);
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });

    it("replay sends one attempt's event again as a new attempt", async () => {
      const endpoint = await createEndpoint();
      const event = await emit('contact.created');
      await deliver();
      const [original] = (await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, { token: apiKey })).body.data;
      const replay = await server.request('POST', `/v1/webhook-deliveries/${original.id}/replay`, { token: apiKey });
      assert.equal(replay.status, 200);
      assert.equal(replay.body.replay_of, original.id);
      assert.equal(replay.body.status, 'succeeded');
      assert.deepEqual(
        receiver.received.map((r) => JSON.parse(r.body).id),
        [event.id, event.id],
      );
      const stranger = await signUp(server);
      assertError(await server.request('POST', `/v1/webhook-deliveries/${original.id}/replay`, { token: stranger.token }), 404, 'resource_not_found');
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });
  });

  describe("ping in an endpoint's events", () => {
    const deliveriesOf = async (id: string) =>
      (await server.request('GET', `/v1/webhook-endpoints/${id}/deliveries`, { token: apiKey })).body.data as { event_type: string }[];

    it('is accepted on create and on update, and shown by get and list', async () => {
      const created = await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['ping'] } });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.events, ['ping']);
      const other = await createEndpoint({ events: ['contact.created'] });
      const patched = await server.request('PATCH', `/v1/webhook-endpoints/${other.id}`, { token: apiKey, body: { events: ['contact.created', 'ping'] } });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(patched.body.events, ['contact.created', 'ping']);
      assert.deepEqual((await server.request('GET', `/v1/webhook-endpoints/${created.body.id}`, { token: apiKey })).body.events, ['ping']);
      const listed = (await server.request('GET', '/v1/webhook-endpoints?limit=100', { token: apiKey })).body.data as { id: string; events: string[] }[];
      assert.deepEqual(listed.find((endpoint) => endpoint.id === created.body.id)?.events, ['ping']);
      assert.deepEqual(listed.find((endpoint) => endpoint.id === other.id)?.events, ['contact.created', 'ping']);
    });

    it('an endpoint subscribed only to ping receives no other event, nor the pings of other endpoints', async () => {
      const pingOnly = await createEndpoint({ events: ['ping'] });
      const contacts = await createEndpoint({ events: ['contact.created'] });
      await emit('contact.created');
      await emit('contact.updated');
      await deliver();
      assert.deepEqual(
        (await deliveriesOf(contacts.id)).map((d) => d.event_type),
        ['contact.created'],
      );
      assert.deepEqual(await deliveriesOf(pingOnly.id), []);
      const tested = await server.request('POST', `/v1/webhook-endpoints/${contacts.id}/test`, { token: apiKey });
      assert.equal(tested.body.success, true);
      assert.equal(await deliver(), 0, 'a test is sent by the operation alone, never queued for subscribers of ping');
      assert.deepEqual(await deliveriesOf(pingOnly.id), []);
      assert.deepEqual(
        receiver.received.map((r) => JSON.parse(r.body).type),
        ['contact.created', 'ping'],
      );
    });

    it('the test operation pings the endpoint tested once, whether its events list ping or not', async () => {
      for (const events of [['contact.created'], ['ping'], ['ping', 'contact.created']]) {
        const endpoint = await createEndpoint({ events });
        receiver.received.length = 0;
        const tested = await server.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { token: apiKey });
        assert.equal(tested.status, 200, tested.text);
        assert.equal(tested.body.success, true);
        await deliver();
        assert.deepEqual(
          receiver.received.map((r) => JSON.parse(r.body).type),
          ['ping'],
          `events ${events.join(', ')}`,
        );
        assert.deepEqual(
          (await deliveriesOf(endpoint.id)).map((d) => d.event_type),
          ['ping'],
        );
        await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
      }
    });
  });

  describe('auto-disable', () => {
    it('100 consecutive failures spanning 24 hours disable the endpoint, write an audit event and mail the owner', async () => {
      const endpoint = await createEndpoint();
      receiver.respond(500);
      for (let i = 0; i < 100; i++) await emit('contact.created');
      await deliver();
      assert.equal(
        (await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey })).body.status,
        'enabled',
        '100 failures within minutes are not enough',
      );
      server.clock.advance(DAY);
      await emit('contact.created');
      await deliver();
      const disabled = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
      assert.equal(disabled.body.status, 'disabled');
      assert.equal(disabled.body.disabled_reason, 'consecutive_failures');
      const audit = await auditLog(`target_id=${endpoint.id}&action=webhook_endpoint.auto_disabled`);
      assert.equal(audit.body.data.length, 1);
      assert.equal(audit.body.data[0].actor.type, 'system');
      const mails = await server.app.store.db.selectFrom('mails').selectAll().where('organization_id', '=', owner.organizationId).execute();
      assert.equal(mails.length, 1);
      assert.equal(mails[0]!.to_address, owner.email);
      assert.equal(mails[0]!.status, 'sent');
      assert.match((await server.app.services.mail.find(mails[0]!.id))!.text, new RegExp(endpoint.id));

      const before = receiver.received.length;
      server.clock.advance(10 * MINUTE);
      await emit('contact.created');
      await deliver();
      assert.equal(receiver.received.length, before, 'a disabled endpoint receives nothing, and its retries stop');

      receiver.respond(200);
      const enabled = await server.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey, body: { status: 'enabled' } });
      assert.equal(enabled.body.status, 'enabled');
      await emit('contact.created');
      await deliver();
      assert.equal(receiver.received.at(-1)!.headers['service-event-type'], 'contact.created');
      await server.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: apiKey });
    });
  });

  describe('connection keys', () => {
    it("a connection key's endpoints are bound to its connection and it sees no others", async () => {
      const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const connection = await createConnection(server, login.body);
      const key = await createKey(server, login.body.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
      const orgWide = await createEndpoint();
      const created = await server.request('POST', '/v1/webhook-endpoints', { token: key.key, body: { url: receiver.url, events: ['contact.created'] } });
      assert.equal(created.status, 201);
      assert.equal(created.body.connection_id, connection.id);
      const list = await server.request('GET', '/v1/webhook-endpoints', { token: key.key });
      assert.deepEqual(
        list.body.data.map((e: { id: string }) => e.id),
        [created.body.id],
      );
      assertError(await server.request('GET', `/v1/webhook-endpoints/${orgWide.id}`, { token: key.key }), 404, 'resource_not_found');
    });
  });
});

describe('webhook endpoint URLs in production mode', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } })));

  for (const url of [
    'http://example.com/hooks',
    'https://10.0.0.1/hooks',
    'https://169.254.169.254/latest',
    'https://localhost/hooks',
    'https://[::ffff:127.0.0.1]/hooks',
    'https://[::1]/hooks',
  ]) {
    it(`${url} is url_not_allowed`, async () => {
      const error = assertError(
        await server.request('POST', '/v1/webhook-endpoints', { token: owner.token, body: { url, events: ['contact.created'] } }),
        400,
        'url_not_allowed',
      );
      assert.equal(error.param, '/url');
    });
  }
});
