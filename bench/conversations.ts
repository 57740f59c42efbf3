/**
 * `conversations`: `GET /v1/conversations?expand=contact,last_message&limit=25` over 50,000
 * conversations of one organization (each with its contact and one message), against bare Fastify
 * sending the same bytes; then the SQL queries one page costs at limit 10 and at limit 100, which
 * must be equal: `expand` loads each relation for the whole page in one query, never one per item.
 * Last, the first page's 25 threads are given 1,000 older messages each and the page is loaded
 * again: its cost must not grow with the threads' length (`long_threads_server_cpu_us_per_req`,
 * against the first load's).
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead.
 */
import type { SeedConversationsResult } from './app-commands.ts';
import { measure, noteSetUpStarting, printCpuResult, printResult, printTable, requestJson, runBench, startApp, startBaseline, loadRow } from './lib.ts';

const CONVERSATIONS = 50_000;
const CONNECTIONS = 50;
const WARMUP_SECONDS = 2;
const SECONDS = 6;
const PATH = '/v1/conversations';
// Then the first page's threads get a long history: what `expand=last_message` costs must not grow with it.
const HISTORY_EACH = 1_000;
const HISTORY_SECONDS = 3;
const QUERY = '?expand=contact,last_message&limit=25';

await runBench('conversations', async () => {
  const app = await startApp();
  const signup = await requestJson<{ token: string; organization: { id: string } }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  const connection = await requestJson<{ id: string }>(`${app.url}/v1/connections`, {
    token: signup.token,
    body: { code: 'bench-conversations', name: 'Bench line' },
    expectStatus: 201,
  });
  // One organization key per load connection, as many clients would call (startApp raises every
  // bucket, so the limiter never caps the load).
  const keys: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    keys.push(
      (
        await requestJson<{ key: string }>(`${app.url}/v1/api-keys`, {
          token: signup.token,
          body: { kind: 'organization', mode: 'live', name: `bench ${i}` },
          expectStatus: 201,
        })
      ).key,
    );
  }
  const connectionHeaders = keys.map((key) => ({ authorization: `Bearer ${key}` }));
  const seeded = await app.call<SeedConversationsResult>('seedConversations', {
    organizationId: signup.organization.id,
    connectionId: connection.id,
    count: CONVERSATIONS,
  });

  const sample = await fetch(app.url + PATH + QUERY, { headers: connectionHeaders[0] });
  const body = Buffer.from(await sample.arrayBuffer());
  const contentType = sample.headers.get('content-type') ?? '';
  if (sample.status !== 200) throw new Error(`GET ${PATH}${QUERY}: ${sample.status} ${body.toString()}`);
  const page = JSON.parse(body.toString()) as { data: { contact: unknown; last_message: unknown }[] };
  if (page.data.length !== 25 || page.data.some((item) => item.contact === null || item.last_message === null)) {
    throw new Error('the sample page does not hold 25 conversations with their contact and last message');
  }

  const baseline = await startBaseline({ path: PATH, body, contentType });
  const check = await fetch(baseline.url + PATH + QUERY);
  if (!Buffer.from(await check.arrayBuffer()).equals(body) || check.headers.get('content-type') !== contentType) {
    throw new Error('the baseline does not answer with the same bytes and content type as the service');
  }

  console.log(
    `conversations: GET ${PATH}${QUERY} over ${CONVERSATIONS.toLocaleString('en')} conversations, ${CONNECTIONS} connections ` +
      `(one organization key each), ${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, ${body.length}-byte page, store: ${app.store}; ` +
      `seeded in ${(seeded.ms / 1000).toFixed(1)} s`,
  );
  const load = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS };
  const base = await measure({ url: baseline.url + PATH + QUERY, pid: baseline.pid, ...load });
  await baseline.stop();
  const service = await measure({ url: app.url + PATH + QUERY, pid: app.pid, connectionHeaders, ...load });

  noteSetUpStarting(app.pid);
  const history = await app.call<SeedConversationsResult>('seedHistory', {
    organizationId: signup.organization.id,
    conversations: 25,
    messagesEach: HISTORY_EACH,
  });
  const longThreads = await measure({
    url: app.url + PATH + QUERY,
    pid: app.pid,
    connectionHeaders,
    connections: CONNECTIONS,
    seconds: HISTORY_SECONDS,
    warmupSeconds: 1,
  });

  // A second app instance in the service's process, which counts a page's queries: not load.
  noteSetUpStarting(app.pid);
  const [small, large] = await app.call<number[]>('countQueries', {
    token: signup.token,
    paths: [`${PATH}?expand=contact,last_message&limit=10`, `${PATH}?expand=contact,last_message&limit=100`],
  });

  console.log('');
  printTable(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'],
    [
      loadRow('service', service),
      loadRow(`service, the page's threads ${HISTORY_EACH.toLocaleString('en')} messages long`, longThreads),
      loadRow('baseline (bare Fastify)', base),
    ],
  );
  console.log(
    `history: ${(25 * HISTORY_EACH).toLocaleString('en')} older messages in the first page's 25 threads, seeded in ${(history.ms / 1000).toFixed(1)} s`,
  );
  console.log('');
  console.log(`SQL queries for one page with expand=contact,last_message (credential check included): limit=10: ${small}, limit=100: ${large}`);
  if (small !== large) throw new Error(`a page's queries grow with its size (${small} at limit 10, ${large} at limit 100)`);
  console.log('');
  const suffix = app.store === 'sqlite' ? '' : '_pg';
  printResult('conversations', `req_per_s${suffix}`, service.reqPerSec, base.reqPerSec);
  printResult('conversations', `p99_ms${suffix}`, service.p99Ms, base.p99Ms, 2);
  printCpuResult('conversations', service.cpuUsPerRequest, base.cpuUsPerRequest, `server_cpu_us_per_req${suffix}`);
  printResult('conversations', `queries_limit_100${suffix}`, large!, small!, 0);
  // Against the same page with one message a thread: a ratio near 1 is a cost independent of history.
  printCpuResult('conversations', longThreads.cpuUsPerRequest, service.cpuUsPerRequest, `long_threads_server_cpu_us_per_req${suffix}`);
});
