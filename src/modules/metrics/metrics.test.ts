import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { registerHooks } from 'node:module';
import { before, describe, it } from 'node:test';
import { mailSend } from '../../jobs/catalog.ts';
import { HOUR, SECOND } from '../../lib/clock.ts';
import { createTestStore, startServer, suiteScope, usingPostgres, type TestServer } from '../../../test/harness.ts';
import { assertError, createConnection, createKey, inbound, settle, signUp, type SignedUp } from '../../../test/factories.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';

// Watches every module resolution from here on, to tell whether prom-client is ever loaded. Nothing
// this file imports above loads it: the metrics module is imported on demand, by a server with a token.
const resolvedPackages = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    resolvedPackages.add(specifier);
    return nextResolve(specifier, context);
  },
});

const TOKEN = randomBytes(32).toString('hex');
const store = usingPostgres ? 'PostgreSQL' : 'SQLite';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text answer (comments skipped; label values here hold no escaped quotes). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(match, `a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="([^"]*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text).filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  assert.ok(found.length <= 1, `one sample of ${name} ${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]?.value;
}

/** Every sample belongs to a family declared once, before its samples, as the text format wants. */
function assertWellFormed(text: string): void {
  const declared = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      assert.ok(!declared.has(type[1]!), `${type[1]} is declared once`);
      declared.set(type[1]!, type[2]!);
    }
  }
  for (const { name } of samples(text)) {
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((candidate) => declared.has(candidate));
    assert.ok(family, `${name} belongs to a declared family`);
    if (family !== name) assert.equal(declared.get(family), 'histogram', name);
  }
}

async function scrape(server: TestServer): Promise<string> {
  const response = await server.request('GET', '/metrics', { token: TOKEN });
  assert.equal(response.status, 200, response.text);
  assert.equal(response.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assertWellFormed(response.text);
  return response.text;
}

describe(`metrics (${store} store)`, () => {
  it('without METRICS_TOKEN there is no /metrics and prom-client is never loaded; with it, both are there', async (t) => {
    const off = await startServer(t);
    assertError(await off.request('GET', '/metrics'), 404, 'route_not_found');
    assertError(await off.request('GET', '/metrics', { token: TOKEN }), 404, 'route_not_found');
    assert.ok(!off.app.accessTable.some((row) => row.url === '/metrics'));
    assert.ok(!resolvedPackages.has('prom-client'), 'prom-client was loaded by a server without METRICS_TOKEN');

    const on = await startServer(t, { env: { METRICS_TOKEN: TOKEN } });
    assert.ok(resolvedPackages.has('prom-client'), 'the hook sees prom-client once a server needs it');
    await scrape(on);
  });

  it('a scrape while the store cannot be reached is 503 service_unavailable, as /readyz is; the process stays up', async (t) => {
    // The server gets a connection of its own to the test's store, so that closing it leaves the store to be dropped.
    const direct = await createTestStore(t);
    const server = await startServer(t, { shareStore: direct, env: { METRICS_TOKEN: TOKEN } });
    await scrape(server);
    await server.app.store.close();
    assertError(await server.request('GET', '/metrics', { token: TOKEN }), 503, 'service_unavailable');
    assertError(await server.request('GET', '/readyz'), 503, 'service_unavailable');
    assert.equal((await server.request('GET', '/healthz')).status, 200);
  });

  describe('with METRICS_TOKEN', () => {
    let server: TestServer;
    let owner: SignedUp;
    const suite = suiteScope();
    before(async () => {
      server = await startServer(suite, { env: { METRICS_TOKEN: TOKEN } });
      owner = await signUp(server);
    });

    it('refuses a scrape without the token (credential_missing) or with another one (credential_invalid)', async () => {
      assertError(await server.request('GET', '/metrics'), 401, 'credential_missing');
      for (const header of [`Bearer ${TOKEN.slice(1)}x`, `Bearer ${TOKEN}x`, `bearer ${TOKEN}`, TOKEN, `Basic ${TOKEN}`]) {
        assertError(await server.request('GET', '/metrics', { headers: { authorization: header } }), 401, 'credential_invalid');
      }
      // An API credential is not the metrics token.
      assertError(await server.request('GET', '/metrics', { token: owner.token }), 401, 'credential_invalid');
    });

    it('is declared public (it checks its own token) and exempt from the rate limit; a scrape spends nothing', async () => {
      const row = server.app.accessTable.find((entry) => entry.url === '/metrics' && entry.method === 'GET');
      assert.ok(row?.access.public && row.access.rateLimit === false, JSON.stringify(row));
      const response = await server.request('GET', '/metrics', { token: TOKEN });
      assert.equal(response.headers.get('x-ratelimit-limit'), null);
    });

    it('counts requests by method, route pattern and status, with their latency, and leaves itself out', async () => {
      const missingId = 'msg_00000000000000000000000000';
      assert.equal((await server.request('GET', '/v1/identity', { token: owner.token })).status, 200);
      assert.equal((await server.request('GET', '/v1/identity', { token: owner.token })).status, 200);
      assertError(await server.request('GET', `/v1/messages/${missingId}`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/no/such/path/${randomBytes(4).toString('hex')}`), 404, 'route_not_found');
      assertError(await server.request('PATCH', '/healthz'), 405, 'method_not_allowed');
      // A scrape the next one would count, were scrapes counted.
      await scrape(server);
      const text = await scrape(server);

      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'GET', route: '/v1/identity', status_code: '200' }), 2);
      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'GET', route: '/v1/messages/:id', status_code: '404' }), 1);
      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'GET', route: 'unmatched', status_code: '404' }), 1);
      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'PATCH', route: 'unmatched', status_code: '405' }), 1);
      assert.equal(valueOf(text, 'messaging_http_request_duration_seconds_count', { method: 'GET', route: '/v1/identity' }), 2);
      assert.equal(valueOf(text, 'messaging_http_request_duration_seconds_bucket', { method: 'GET', route: '/v1/identity', le: '+Inf' }), 2);
      assert.ok(valueOf(text, 'messaging_http_request_duration_seconds_sum', { method: 'GET', route: '/v1/identity' })! > 0);
      assert.ok(!text.includes(missingId), 'no raw URL becomes a label');
      assert.ok(!text.includes('route="/metrics"'), 'scrapes are not counted');
    });

    it('reports provider calls, pacing waits and webhook deliveries by outcome, after a send through the sandbox', async () => {
      const key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
      const line = await createConnection(server, owner);
      const receiver: Receiver = await startReceiver(suite);
      const failing: Receiver = await startReceiver(suite);
      failing.respond(500);
      for (const url of [receiver.url, failing.url]) {
        const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: key, body: { url, events: ['message.sent'] } });
        assert.equal(endpoint.status, 201, endpoint.text);
      }
      const received = await inbound(server, line);
      const reply = await server.request('POST', '/v1/messages', {
        token: key,
        body: { connection_id: line.id, contact_id: received.contact_id, type: 'text', text: { body: 'On its way.' } },
        headers: { 'idempotency-key': randomBytes(8).toString('hex') },
      });
      assert.equal(reply.status, 201, reply.text);
      await settle(server);
      assert.equal(receiver.received.length, 1);
      assert.equal(failing.received.length, 1);

      const text = await scrape(server);
      assert.equal(valueOf(text, 'messaging_provider_calls_total', { operation: 'sendMessage', outcome: 'ok' }), 1);
      assert.equal(valueOf(text, 'messaging_provider_call_duration_seconds_count', { operation: 'sendMessage' }), 1);
      // Connecting the number asked the provider about it, through the same adapter.
      assert.ok(valueOf(text, 'messaging_provider_calls_total', { operation: 'getPhoneNumber', outcome: 'ok' })! >= 1);
      assert.equal(valueOf(text, 'messaging_pacing_wait_seconds_count'), 1);
      assert.equal(valueOf(text, 'messaging_pacing_refusals_total'), 0);
      assert.equal(valueOf(text, 'messaging_webhook_deliveries_total', { outcome: 'succeeded' }), 1);
      assert.equal(valueOf(text, 'messaging_webhook_deliveries_total', { outcome: 'http_error' }), 1);
      assert.equal(valueOf(text, 'messaging_webhook_delivery_duration_seconds_count'), 2);
      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'POST', route: '/v1/messages', status_code: '201' }), 1);
      // The sandbox answers the send over loopback, and its statuses come back to the provider's webhook: routes like any other.
      assert.equal(valueOf(text, 'messaging_http_requests_total', { method: 'POST', route: '/sandbox/graph/:version/:id/messages', status_code: '200' }), 1);
      assert.ok(valueOf(text, 'messaging_http_requests_total', { method: 'POST', route: '/provider/webhook', status_code: '200' })! >= 2);
      // The process's own figures, under the names Node.js dashboards know.
      assert.ok(valueOf(text, 'process_cpu_seconds_total')! > 0);
      assert.ok(valueOf(text, 'nodejs_heap_size_used_bytes')! > 0);
    });

    it('reads the queue at each scrape: due jobs and the age of the oldest per job name, jobs due later left out', async () => {
      await settle(server);
      const queue = server.app.services.queue;
      await server.app.store.db.transaction().execute(async (trx) => {
        await queue.enqueue(trx, mailSend, { mail_id: 'mail_due' });
        await queue.enqueue(trx, mailSend, { mail_id: 'mail_later' }, { runAt: new Date(server.clock.now().getTime() + HOUR) });
      });
      let text = await scrape(server);
      assert.equal(valueOf(text, 'messaging_jobs_due', { job_name: 'mail.send' }), 1);
      assert.equal(valueOf(text, 'messaging_jobs_oldest_due_age_seconds', { job_name: 'mail.send' }), 0);
      // Every catalogued job has its series, idle ones at 0.
      assert.equal(valueOf(text, 'messaging_jobs_due', { job_name: 'webhook.deliver' }), 0);
      assert.equal(valueOf(text, 'messaging_jobs_running', { job_name: 'webhook.deliver' }), 0);
      assert.equal(valueOf(text, 'messaging_jobs_backlog_truncated'), 0);

      server.clock.advance(90 * SECOND);
      text = await scrape(server);
      assert.equal(valueOf(text, 'messaging_jobs_oldest_due_age_seconds', { job_name: 'mail.send' }), 90);

      server.clock.advance(HOUR);
      text = await scrape(server);
      assert.equal(valueOf(text, 'messaging_jobs_due', { job_name: 'mail.send' }), 2);
      assert.equal(valueOf(text, 'messaging_jobs_oldest_due_age_seconds', { job_name: 'mail.send' }), 3690);
      await settle(server);
      text = await scrape(server);
      assert.equal(valueOf(text, 'messaging_jobs_due', { job_name: 'mail.send' }), 0);
      assert.equal(valueOf(text, 'messaging_jobs_oldest_due_age_seconds', { job_name: 'mail.send' }), 0);
    });
  });
});
