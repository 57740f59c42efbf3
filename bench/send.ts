/**
 * `send`: sustained `POST /v1/messages` (a text, each with its own Idempotency-Key) against the real
 * service, whose own worker (ROLE=all, as `npm start` runs it) hands every stored message to the
 * sandbox provider mounted in the same process, with the number upgraded to the provider's 1,000
 * messages a second so that pacing stays out of the way. Against a bare Fastify POST route answering
 * the same bytes, in the same run.
 *
 * Figures: requests answered a second (the message stored, its event emitted and its send queued,
 * 201 answered) with the worker sending beside them; after the load stops, how long the worker takes
 * to send what was queued (every message past `queued`); then the same requests with the worker
 * stopped, the API's own share (`api_only_req_per_s`).
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead.
 */
import { measure, mib, printCpuResult, printResult, printTable, requestJson, runBench, startApp, startBaseline, loadRow, choosePlan } from './lib.ts';

const CONNECTIONS = 50;
const SECONDS = 10;
const WARMUP_SECONDS = 2;
const API_ONLY_SECONDS = 5;
const PATH = '/v1/messages';
// One customer per load connection: fifty agents answering fifty customers at once.
const CUSTOMERS = CONNECTIONS;
const DRAIN_SECONDS = 15;
const DRAIN_POLL_MS = 250;
// A worker that sends nothing for this long while messages wait has stalled: the bench fails.
const STALL_MS = 5_000;
// The number's throughput after the upgrade below: the most the worker may send a second.
const PROVIDER_PER_SECOND = 1_000;

await runBench('send', async () => {
  const app = await startApp();
  // The service's own worker, as src/main.ts runs it beside the HTTP server (ROLE=all).
  await app.call('startWorker', {});
  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  await choosePlan(app.url, signup.token, 'scale');
  const connection = await requestJson<{ id: string; phone_number_id: string }>(`${app.url}/v1/connections`, {
    token: signup.token,
    body: { code: 'bench-send', name: 'Bench line' },
    expectStatus: 201,
  });
  // The provider's upgraded throughput (1,000/s), read back by a sync: the pacer follows the number.
  await requestJson(`${app.url}/sandbox/control/throughput`, { body: { phone_number_id: connection.phone_number_id, level: 'HIGH' } });
  await requestJson(`${app.url}/v1/connections/${connection.id}/sync`, { token: signup.token, body: {} });

  // The sandbox's status walk (three signed webhooks in per message sent) is the inbound bench's
  // subject; here it would triple the work per send. BENCH_SEND_STATUS_WALK=1 keeps it.
  if (process.env.BENCH_SEND_STATUS_WALK !== '1') await requestJson(`${app.url}/sandbox/control/behaviour`, { body: { auto_status: false } });

  // Customers who wrote in, so that free-form messages are inside their 24-hour window.
  const contactIds: string[] = [];
  for (let i = 0; i < CUSTOMERS; i++) {
    const from = `44770010${String(i).padStart(4, '0')}`;
    await requestJson(`${app.url}/sandbox/control/inbound`, { body: { phone_number_id: connection.phone_number_id, from, type: 'text', text: 'Hello' } });
    for (let tries = 0; ; tries++) {
      const page = await requestJson<{ data: { id: string }[] }>(`${app.url}/v1/contacts?phone_number=%2B${from}`, { token: signup.token });
      if (page.data[0]) {
        contactIds.push(page.data[0].id);
        break;
      }
      if (tries > 200) throw new Error(`the inbound message from ${from} was never filed`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  // One connection key per load connection, each writing to its own customer's conversation: fifty
  // agents at once (startApp raises every bucket, so the limiter never caps the load).
  const connectionHeaders: Record<string, string>[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const created = await requestJson<{ key: string }>(`${app.url}/v1/api-keys`, {
      token: signup.token,
      body: { kind: 'connection', mode: 'live', connection_id: connection.id, name: `bench ${i}` },
      expectStatus: 201,
    });
    connectionHeaders.push({ authorization: `Bearer ${created.key}` });
  }
  const bodies = contactIds.map((contactId) =>
    JSON.stringify({ contact_id: contactId, type: 'text', text: { body: 'Your order has shipped and will arrive tomorrow between 9:00 and 13:00.' } }),
  );
  const body = bodies[0]!;
  const headers = { 'content-type': 'application/json', 'idempotency-key': 'bench-[<id>]' };

  const sample = await fetch(app.url + PATH, { method: 'POST', headers: { ...headers, ...connectionHeaders[0], 'idempotency-key': 'bench-sample' }, body });
  const sampleBody = Buffer.from(await sample.arrayBuffer());
  if (sample.status !== 201) throw new Error(`POST ${PATH}: ${sample.status} ${sampleBody.toString()}`);
  const baseline = await startBaseline({ method: 'POST', path: PATH, body: sampleBody, contentType: sample.headers.get('content-type') ?? '', status: 201 });

  console.log(
    `send: POST ${PATH} (text, a new Idempotency-Key each), ${CONNECTIONS} connections (a connection key and a customer each), ` +
      `${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, store: ${app.store}`,
  );
  const load = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, method: 'POST', headers, body, idReplacement: true };
  const base = await measure({ url: baseline.url + PATH, pid: baseline.pid, ...load });
  await baseline.stop();
  const real = await measure({ url: app.url + PATH, pid: app.pid, connectionHeaders, connectionBodies: bodies, ...load });
  const loadEnded = Date.now();

  // What the load queued, sent by the worker once the requests stop: for DRAIN_SECONDS at most, since
  // the backlog grows with the machine's speed (the API answers sends several times faster than
  // the provider's 1,000 a second lets the worker send them) and the bench must end within a minute.
  const atLoadEnd = await app.call<Record<string, number>>('messageCounts', {});
  let counts = atLoadEnd;
  let progressAt = loadEnded;
  while ((counts.queued ?? 0) > 0 && Date.now() - loadEnded < DRAIN_SECONDS * 1000) {
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    const next = await app.call<Record<string, number>>('messageCounts', {});
    if ((next.queued ?? 0) < (counts.queued ?? 0)) progressAt = Date.now();
    else if (Date.now() - progressAt > STALL_MS) throw new Error(`the worker sent nothing for ${STALL_MS} ms with ${next.queued} messages queued`);
    counts = next;
  }
  const drainMs = Date.now() - loadEnded;
  // A send the provider refused (a non-2xx from the sandbox) fails the bench, as a refused request does.
  if ((counts.failed ?? 0) > 0) {
    const failed = await requestJson<{ data: { id: string; error: unknown }[] }>(`${app.url}${PATH}?status=failed&limit=1`, { token: signup.token });
    throw new Error(`${counts.failed} messages failed to send, the first: ${JSON.stringify(failed.data[0])}`);
  }
  const drained = (atLoadEnd.queued ?? 0) - (counts.queued ?? 0);
  const drainPerSecond = drained / (drainMs / 1000);
  const rss = await app.rss();

  // The same requests with the worker stopped: what answering a send costs on its own.
  await app.call('stopWorker', {});
  const apiOnly = await measure({
    url: app.url + PATH,
    pid: app.pid,
    connectionHeaders,
    connectionBodies: bodies,
    ...load,
    seconds: API_ONLY_SECONDS,
    warmupSeconds: 1,
  });

  console.log('');
  printTable(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'],
    [loadRow('service', real), loadRow('service, worker stopped', apiOnly), loadRow('baseline (bare Fastify)', base)],
  );
  console.log('');
  const left = counts.queued ?? 0;
  console.log(
    `after the load: ${(atLoadEnd.queued ?? 0).toLocaleString('en')} messages queued; the worker sent ${drained.toLocaleString('en')} in ${drainMs} ms ` +
      `(${drainPerSecond.toFixed(0)}/s against the provider's ${PROVIDER_PER_SECOND}/s)` +
      (left > 0 ? `, ${left.toLocaleString('en')} still queued when the bench moved on` : ', every one') +
      `; server RSS ${mib(rss)} MiB`,
  );
  printResult('send', 'req_per_s', real.reqPerSec, base.reqPerSec);
  printResult('send', 'p50_ms', real.p50Ms, base.p50Ms, 2);
  printResult('send', 'p99_ms', real.p99Ms, base.p99Ms, 2);
  printResult('send', 'api_only_req_per_s', apiOnly.reqPerSec, base.reqPerSec);
  printCpuResult('send', real.cpuUsPerRequest, base.cpuUsPerRequest);
  printCpuResult('send', apiOnly.cpuUsPerRequest, base.cpuUsPerRequest, 'api_only_server_cpu_us_per_req');
  // Sends a second once the API is idle, against what the provider allows the number.
  printResult('send', 'drain_per_s', drainPerSecond, PROVIDER_PER_SECOND);
});
