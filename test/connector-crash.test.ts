/**
 * An `http_request` step across a worker crash: a separate worker process (the real `src/main.ts`
 * with ROLE=worker) records the request, sends it, and is killed with SIGKILL while the shop's API
 * holds its answer, so the worker dies after the call and before recording what came back. The test's
 * own server takes the step over once the dead worker's lease has run out: it finds the step begun,
 * calls again with the same Idempotency-Key, records the answer, and the run completes once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, SECOND } from '../src/lib/clock.ts';
import { createConnection, createKey, newCustomer, settle, signUp } from './factories.ts';
import { startServer, type TestServer } from './harness.ts';
import { startReceiver } from './receiver.ts';
import { spawnService, storeEnv } from './service-process.ts';
import { waitFor } from './wait.ts';

type Json = Record<string, any>;

const LEASE_MS = 10 * SECOND;

describe('an http_request step when its worker dies after the call', () => {
  it('the retry sends the same Idempotency-Key and the run completes once', { timeout: 60_000 }, async (t) => {
    // The worker process runs on the real clock, so what the test's server queues must be due by it.
    const server: TestServer = await startServer(t, { clock: new ManualClock(Date.now()) });
    const owner = await signUp(server);
    const key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const connection = await createConnection(server, { token: key });
    const shop = await startReceiver(t, '/api');

    const account = await server.request('POST', '/v1/connector-accounts', {
      token: key,
      body: { connector: 'http_bearer', name: 'Shop', fields: { base_url: shop.url, token: 'shop_secret_token_0123456789' } },
    });
    assert.equal(account.status, 201, account.text);
    const definition = {
      trigger: { type: 'api' },
      start: 'refund',
      steps: [
        {
          id: 'refund',
          type: 'http_request',
          connector_account_id: account.body.id,
          method: 'POST',
          path: '/refunds',
          body: '{"order": input.order}',
          save_as: 'refund',
          branches: { ok: 'done' },
        },
        { id: 'done', type: 'end', outcome: 'refunded' },
      ],
    };
    const created = await server.request('POST', '/v1/automations', { token: key, body: { name: 'Refund', connection_id: connection.id, definition } });
    assert.equal(created.status, 201, created.text);
    for (const [action, body] of [
      ['deploy', { version: 1 }],
      ['enable', undefined],
    ] as const) {
      const response = await server.request('POST', `/v1/automations/${created.body.id}/${action}`, { token: key, body });
      assert.equal(response.status, 200, response.text);
    }

    shop.received.length = 0;
    shop.hold();
    const started = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': 'crash-refund' },
      body: { automation_id: created.body.id, to: `+${newCustomer()}`, input: { order: 'A42' } },
    });
    assert.equal(started.status, 201, started.text);
    const runId = started.body.id as string;

    const worker = spawnService(
      t,
      {
        ...storeEnv(server.testStore),
        ROLE: 'worker',
        PROVIDER_BASE_URL: `${server.url}/sandbox/graph`,
        LOG_LEVEL: 'warn',
        WORKER_LEASE_MS: String(LEASE_MS),
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      },
      server.testStore,
    );
    await waitFor(
      () => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited (${worker.child.exitCode}): ${worker.output()}`);
        return shop.held() === 1;
      },
      { timeoutMs: 30_000, intervalMs: 10, message: () => `the worker's request to reach the shop. ${worker.output()}` },
    );
    worker.child.kill('SIGKILL');
    await waitFor(() => worker.child.signalCode !== null, { timeoutMs: 10_000, message: 'the worker to die' });
    // The shop answers now, to a worker that is gone: nothing records it.
    shop.release();

    const events = async (): Promise<Json[]> => (await server.request('GET', `/v1/runs/${runId}/events`, { token: key })).body.data;
    const before = await events();
    assert.equal(before.at(-1)!.type, 'effect.http_request', 'the dead worker recorded its request and nothing after it');
    assert.equal((await server.request('GET', `/v1/runs/${runId}`, { token: key })).body.status, 'running');

    // Once the dead worker's lease has run out, the test's server takes its job over.
    server.clock.set(Date.now() + LEASE_MS + SECOND);
    await settle(server);

    const run = (await server.request('GET', `/v1/runs/${runId}`, { token: key })).body;
    assert.equal(run.status, 'completed', JSON.stringify(run));
    assert.equal(run.outcome, 'refunded');
    assert.equal(run.variables.refund.status, 200);
    assert.equal(run.steps_executed, 2, 'the step counted once');
    assert.equal(shop.received.length, 2, 'the shop was called by the dead worker and once more by its successor');
    assert.deepEqual(
      shop.received.map((request) => request.headers['idempotency-key']),
      [`${runId}:0`, `${runId}:0`],
    );
    const log = await events();
    assert.deepEqual(
      log.filter((event) => event.type.startsWith('effect.') || event.type.startsWith('run.')).map((event) => [event.type, event.data.attempt ?? null]),
      [
        ['run.created', null],
        ['run.started', null],
        ['effect.http_request', 1],
        ['effect.http_request', 2],
        ['effect.http_response', 2],
        ['run.completed', null],
      ],
    );
  });
});
