/**
 * `notifications`: a batch of 1,000 notifications at a number with a 100-a-second ceiling, through
 * the real service (its own worker, as `npm start` runs it) to the sandbox provider in the same
 * process. Figures: the time from the first send reaching the provider to every notification being
 * `sent`, against the ideal 10 s (1,000 at 100 a second); the most sends the provider saw in any
 * sliding second (must not exceed the ceiling: the ceiling is its baseline); and the API's time to
 * accept the batch (checks, 1,000 rows, 1,000 jobs, one commit), against a bare Fastify POST
 * answering the same bytes.
 *
 * The provider's levels are 20, 80 and 1,000 a second: the bench sets the connection's ceiling to
 * 100 through an app command, and lifts the sandbox's own ceiling out of the way (the pacer is what
 * is measured, not the provider's throttle).
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead.
 */
import { mib, printCpuResult, printResult, printTable, requestJson, runBench, startApp, startBaseline, startCpuClock, choosePlan } from './lib.ts';

const RECIPIENTS = 1_000;
const CEILING = 100;
const IDEAL_SECONDS = RECIPIENTS / CEILING;
const DONE_TIMEOUT_MS = 40_000;
const WARMUP_BATCHES = 1;

/** The most timestamps (ms, sorted) in any window of `windowMs` that starts at one of them. */
function mostInAnyWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

await runBench('notifications', async () => {
  const app = await startApp();
  await app.call('startWorker', {});
  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  await choosePlan(app.url, signup.token, 'scale');
  const token = signup.token;
  const connection = await requestJson<{ id: string; phone_number_id: string }>(`${app.url}/v1/connections`, {
    token,
    body: { code: 'bench-notifications', name: 'Bench line' },
    expectStatus: 201,
  });
  await app.call('setThroughput', { connectionId: connection.id, perSecond: CEILING });
  // The walk of statuses (three webhooks in per send) is the inbound bench's subject.
  await requestJson(`${app.url}/sandbox/control/behaviour`, { body: { auto_status: false, throughput_mps: 100_000 } });
  const template = await requestJson<{ id: string; provider_template_id: string }>(`${app.url}/v1/templates`, {
    token,
    body: {
      connection_id: connection.id,
      name: 'order_update',
      language: 'en_US',
      category: 'utility',
      components: [{ type: 'body', text: 'Hi {{1}}, order {{2}} has shipped.', examples: ['Ana', 'A-1'] }],
    },
    expectStatus: 201,
  });
  await requestJson(`${app.url}/sandbox/control/template-status`, { body: { template_id: template.provider_template_id, status: 'APPROVED' } });
  for (let tries = 0; ; tries++) {
    const current = await requestJson<{ status: string }>(`${app.url}/v1/templates/${template.id}`, { token });
    if (current.status === 'approved') break;
    if (tries > 200) throw new Error('the template was never approved');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }

  let customer = 0;
  const batchBody = () =>
    JSON.stringify({
      connection_id: connection.id,
      template: { id: template.id },
      recipients: Array.from({ length: RECIPIENTS }, () => ({
        to: `+4477001${String(customer++).padStart(5, '0')}`,
        parameters: { body: ['Ana', `A-${customer}`] },
      })),
    });
  let keys = 0;
  async function postBatch(body: string): Promise<{ ms: number; id: string; answer: Buffer; contentType: string }> {
    const started = performance.now();
    const response = await fetch(`${app.url}/v1/notifications/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `bench-${keys++}` },
      body,
    });
    const answer = Buffer.from(await response.arrayBuffer());
    const ms = performance.now() - started;
    if (response.status !== 201) throw new Error(`POST /v1/notifications/batch: ${response.status} ${answer.toString()}`);
    return { ms, id: (JSON.parse(answer.toString()) as { id: string }).id, answer, contentType: response.headers.get('content-type') ?? '' };
  }
  async function waitUntilSent(batchId: string): Promise<number> {
    const started = Date.now();
    for (;;) {
      const batch = await requestJson<{ counts: Record<string, number> }>(`${app.url}/v1/notifications/batches/${batchId}`, { token });
      const { scheduled, queued, sending, failed, expired } = batch.counts;
      if (failed! + expired! > 0) throw new Error(`notifications failed or expired: ${JSON.stringify(batch.counts)}`);
      if (scheduled! + queued! + sending! === 0) return Date.now();
      if (Date.now() - started > DONE_TIMEOUT_MS) throw new Error(`the batch was not sent within ${DONE_TIMEOUT_MS} ms: ${JSON.stringify(batch.counts)}`);
      // Each look counts the batch's 1,000 rows: often enough to time it, rarely enough not to load the server.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  // Warm-up: the API path and the worker's send path, one batch, sent to the end.
  const warmups: number[] = [];
  for (let i = 0; i < WARMUP_BATCHES; i++) warmups.push((await postBatch(batchBody())).ms);
  // The warm-up batch takes its 10 s of the lane; it finishes before the measured one starts.
  for (;;) {
    const page = await requestJson<{ data: unknown[] }>(`${app.url}/v1/notifications?status=queued&limit=1`, { token });
    if (page.data.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  const body = batchBody();
  const cpu = startCpuClock(app.pid);
  const accepted = await postBatch(body);
  const sentAt = await waitUntilSent(accepted.id);
  const cpuPerNotification = cpu.usPer(RECIPIENTS);
  const arrivals = (await app.call<number[]>('sandboxArrivals', { phoneNumberId: connection.phone_number_id })).slice(RECIPIENTS * WARMUP_BATCHES);
  if (arrivals.length !== RECIPIENTS) throw new Error(`the provider saw ${arrivals.length} sends of the measured batch, not ${RECIPIENTS}`);
  const batchSeconds = (sentAt - arrivals[0]!) / 1000;
  const most = mostInAnyWindow(arrivals, 1000);
  const rss = await app.rss();

  // The API's share against a bare route answering the same bytes.
  const baseline = await startBaseline({
    method: 'POST',
    path: '/v1/notifications/batch',
    body: accepted.answer,
    contentType: accepted.contentType,
    status: 201,
  });
  const bareStarted = performance.now();
  const bare = await fetch(`${baseline.url}/v1/notifications/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await bare.arrayBuffer();
  const bareMs = performance.now() - bareStarted;
  await baseline.stop();

  console.log(`notifications: a batch of ${RECIPIENTS} at a ${CEILING}/s ceiling, store: ${app.store}`);
  printTable(
    ['figure', 'value'],
    [
      ['accept the batch (API), ms', accepted.ms.toFixed(1)],
      ['accept, warm-up batches, ms', warmups.map((ms) => ms.toFixed(0)).join(', ')],
      ['bare Fastify POST of the same body, ms', bareMs.toFixed(1)],
      ['first send to all sent, s', batchSeconds.toFixed(2)],
      ['most sends in any second', String(most)],
      ['server CPU per notification, µs', cpuPerNotification === undefined ? 'n/a' : cpuPerNotification.toFixed(0)],
      ['server RSS, MiB', mib(rss)],
    ],
  );
  printResult('notifications', 'batch_seconds', batchSeconds, IDEAL_SECONDS, 2);
  printResult('notifications', 'max_per_second', most, CEILING, 0);
  printResult('notifications', 'accept_ms', accepted.ms, bareMs, 1);
  // The baseline: the time one core has per notification at the ceiling (10,000 µs at 100 a second).
  if (cpuPerNotification === undefined) printCpuResult('notifications', undefined, undefined, 'server_cpu_us_per_notification');
  else printResult('notifications', 'server_cpu_us_per_notification', cpuPerNotification, 1e6 / CEILING, 0);
});
