import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DAY, HOUR } from '../../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { createKey, signUp, type SignedUp } from '../../../test/factories.ts';
import { DELIVERY_RETENTION_MS } from './webhook-endpoints.service.ts';

describe('webhook delivery attempts are kept 30 days', () => {
  let server: TestServer;
  let owner: SignedUp;
  let receiver: Receiver;
  let endpointId: string;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    receiver = await startReceiver(suite);
    const apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const created = await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['contact.created'] } });
    assert.equal(created.status, 201, created.text);
    endpointId = created.body.id;
  });

  const emitAndDeliver = async (name: string): Promise<string> => {
    const event = await server.app.store.db.transaction().execute((trx) =>
      server.app.services.events.emit(trx, {
        type: 'contact.created',
        organizationId: owner.organizationId,
        connectionId: null,
        object: { id: `ct_${name}`, object: 'contact', name },
      }),
    );
    await server.app.worker.drain();
    const delivery = await server.app.store.db.selectFrom('webhook_deliveries').select('id').where('event_id', '=', event.id).executeTakeFirstOrThrow();
    return delivery.id;
  };
  const attempts = async () =>
    (await server.app.store.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpointId).execute()).map((row) => row.id).sort();

  it("the hourly webhook_delivery.purge removes attempts past 30 days, except one whose retry is still ahead, and the worker's other work goes on", async () => {
    await emitAndDeliver('old');
    const oldRetrying = await emitAndDeliver('old-retrying');
    server.clock.advance(2 * DAY);
    const recent = await emitAndDeliver('recent');
    // As if its retry had been pushed far out: the delivery is not over, so its history stays.
    server.clock.advance(DELIVERY_RETENTION_MS - 2 * DAY + HOUR);
    await server.app.store.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', next_retry_at: new Date(server.clock.now().getTime() + HOUR).toISOString() })
      .where('id', '=', oldRetrying)
      .execute();

    receiver.received.length = 0;
    const fresh = await emitAndDeliver('fresh');
    assert.equal(receiver.received.length, 1, 'the drain that purged also delivered');
    assert.deepEqual(await attempts(), [oldRetrying, recent, fresh].sort());

    server.clock.advance(2 * DAY);
    await server.app.worker.drain();
    assert.deepEqual(await attempts(), [fresh], 'past its retry time and 30 days, the retried attempt goes too');
  });
});
