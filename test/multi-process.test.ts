/**
 * The production layout, with real processes: two api processes and one worker (`src/main.ts` with
 * ROLE=api and ROLE=worker) on one store (PostgreSQL and Redis in CI's second pass; an SQLite file in
 * the first), in sandbox mode. Each api process mounts the sandbox, whose world lives in the store;
 * the worker reaches it through the second api process. A customer's message, the reply, their
 * webhooks and a restart all cross process boundaries: nothing may depend on which process took
 * what.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { verifyWebhookSignature } from '../src/events/webhook-signature.ts';
import { createConnection, createKey, signUp } from './factories.ts';
import { apiClient, createTestStore, suiteScope, type ApiClient, type TestStore } from './harness.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { listeningUrl, spawnService, storeEnv, type ServiceProcess } from './service-process.ts';
import { waitFor } from './wait.ts';

interface Started extends ApiClient {
  url: string;
  service: ServiceProcess;
}

const CUSTOMER = '447700900123';

describe('two api processes and a worker on one store, in sandbox mode', () => {
  const suite = suiteScope();
  let testStore: TestStore;
  let receiver: Receiver;
  let api1: Started;
  let api2: Started;
  let apiKey: string;
  let webhookSecret: string;
  let connection: { id: string; phone_number_id: string };

  /** What every process of this deployment shares: the store, Redis when configured, a rate-limit prefix of its own. */
  function env(role: 'api' | 'worker', extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...storeEnv(testStore),
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      RATE_LIMIT_KEY_PREFIX: `multi-${randomBytes(4).toString('hex')}`,
      ROLE: role,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '100000',
      ...extra,
    };
  }

  async function startApi(): Promise<Started> {
    const service = spawnService(suite, env('api'), testStore);
    const url = await listeningUrl(service);
    return { url, service, ...apiClient(url) };
  }

  /** The deliveries of one event type the receiver got, each verified against the endpoint's secret. */
  function delivered(type: string): { data: { object: Record<string, unknown> } }[] {
    return receiver.received
      .filter((request) => {
        assert.equal(verifyWebhookSignature(request.body, String(request.headers['service-signature']), webhookSecret).valid, true, request.body);
        return (JSON.parse(request.body) as { type: string }).type === type;
      })
      .map((request) => JSON.parse(request.body) as { data: { object: Record<string, unknown> } });
  }

  async function deliveredEventually(type: string, match: (object: Record<string, unknown>) => boolean) {
    return waitFor(() => delivered(type).find((event) => match(event.data.object)), {
      timeoutMs: 30_000,
      intervalMs: 50,
      message: () => `a ${type} delivery; received ${receiver.received.map((request) => (JSON.parse(request.body) as { type: string }).type).join(', ')}`,
    });
  }

  before(async () => {
    testStore = await createTestStore(suite);
    // One master key for every process, as a deployment gives them all the same one.
    writeFileSync(path.join(testStore.dataDir, 'master.key'), `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    receiver = await startReceiver(suite);
    api1 = await startApi();
    api2 = await startApi();
    // The worker calls the provider through the second api process's sandbox: a worker serves no HTTP.
    const worker = spawnService(suite, env('worker', { PROVIDER_BASE_URL: `${api2.url}/sandbox/graph` }), testStore);
    // Its start-up line names its role; the job loop starts right after it.
    await waitFor(() => worker.output().includes('"role":"worker"') || worker.child.exitCode !== null, {
      timeoutMs: 30_000,
      intervalMs: 50,
      message: () => `the worker to start: ${worker.output()}`,
    });
    assert.equal(worker.child.exitCode, null, worker.output());

    const owner = await signUp(api1);
    apiKey = (await createKey(api2, owner.token, { kind: 'organization', mode: 'live' })).key;
    const endpoint = await api1.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: `${receiver.url}`, events: ['*'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    webhookSecret = endpoint.body.secret;
    // The number is created by api1's sandbox; everything after uses it through other processes.
    connection = await createConnection(api1, owner);
  });

  it("a customer writes through one process's sandbox; the reply is sent by the worker through the other's; every event reaches the receiver", async () => {
    const inbound = await api2.request('POST', '/sandbox/control/inbound', {
      body: { phone_number_id: connection.phone_number_id, from: CUSTOMER, type: 'text', text: 'Hello from a customer' },
    });
    assert.equal(inbound.status, 200, inbound.text);
    const received = await deliveredEventually('message.received', (message) => message.provider_message_id === inbound.body.message_id);
    assert.equal(received.data.object.connection_id, connection.id);

    // The reply goes in through api1; the window the customer opened (at api2's sandbox) lets it pass.
    const reply = await api1.request('POST', '/v1/messages', {
      token: apiKey,
      headers: { 'idempotency-key': `reply-${randomBytes(6).toString('hex')}` },
      body: { connection_id: connection.id, to: `+${CUSTOMER}`, type: 'text', text: { body: 'Hi! How can we help?' } },
    });
    assert.equal(reply.status, 201, reply.text);
    const sent = await deliveredEventually('message.sent', (message) => message.id === reply.body.id);
    const providerMessageId = String(sent.data.object.provider_message_id);
    // The sandbox's walk of it, reported by the process that took the send, reaches the service too.
    await deliveredEventually('message.status', (message) => message.id === reply.body.id && message.status === 'read');

    // Every process sees one provider: the message is in the sandbox's record, read through api1.
    const log = await api1.request('GET', '/sandbox/control/webhooks');
    assert.equal(log.status, 200);
    const statuses = log.body.data.filter((entry: { body: unknown }) => JSON.stringify(entry.body).includes(providerMessageId));
    assert.ok(statuses.length >= 3, `the sent, delivered and read webhooks of ${providerMessageId} are in the shared log`);
    const fetched = await api2.request('GET', `/v1/messages/${reply.body.id}`, { token: apiKey });
    assert.equal(fetched.body.status, 'read', fetched.text);
  });

  it('an api process killed and started again keeps the sandbox world: its number, token and windows still work', async () => {
    const exited = new Promise((resolve) => api1.service.child.once('exit', resolve));
    api1.service.child.kill('SIGKILL');
    await exited;
    const restarted = await startApi();

    const status = await restarted.request('GET', `/v1/connections/${connection.id}`, { token: apiKey });
    assert.equal(status.body.status, 'connected', status.text);
    const inbound = await restarted.request('POST', '/sandbox/control/inbound', {
      body: { phone_number_id: connection.phone_number_id, from: CUSTOMER, type: 'text', text: 'Still there?' },
    });
    assert.equal(inbound.status, 200, `the restarted process's sandbox knows the number: ${inbound.text}`);
    await deliveredEventually('message.received', (message) => message.provider_message_id === inbound.body.message_id);

    const reply = await restarted.request('POST', '/v1/messages', {
      token: apiKey,
      headers: { 'idempotency-key': `again-${randomBytes(6).toString('hex')}` },
      body: { connection_id: connection.id, to: `+${CUSTOMER}`, type: 'text', text: { body: 'Yes!' } },
    });
    assert.equal(reply.status, 201, reply.text);
    await deliveredEventually('message.sent', (message) => message.id === reply.body.id);
  });
});
