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
import { expectSamePage, INBOX_CONNECTIONS, INBOX_CONVERSATIONS, INBOX_PATH as PATH, INBOX_QUERY as QUERY, setUpInbox } from './inbox-setup.ts';
import { measure, noteSetUpStarting, printCpuResult, printResult, printTable, runBench, startApp, startBaseline, loadRow } from './lib.ts';

const WARMUP_SECONDS = 2;
const SECONDS = 6;
// Then the first page's threads get a long history: what `expand=last_message` costs must not grow with it.
const HISTORY_EACH = 1_000;
const HISTORY_SECONDS = 3;

await runBench('conversations', async () => {
  const app = await startApp();
  const inbox = await setUpInbox(app);
  const { connectionHeaders, page } = inbox;
  const body = page.body;

  const baseline = await startBaseline({ path: PATH, body, contentType: page.contentType });
  await expectSamePage(baseline, inbox);

  console.log(
    `conversations: GET ${PATH}${QUERY} over ${INBOX_CONVERSATIONS.toLocaleString('en')} conversations, ${INBOX_CONNECTIONS} connections ` +
      `(one organization key each), ${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, ${body.length}-byte page, store: ${app.store}; ` +
      `seeded in ${(inbox.seededMs / 1000).toFixed(1)} s`,
  );
  const load = { connections: INBOX_CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS };
  const base = await measure({ url: baseline.url + PATH + QUERY, pid: baseline.pid, ...load });
  await baseline.stop();
  const service = await measure({ url: app.url + PATH + QUERY, pid: app.pid, connectionHeaders, ...load });

  noteSetUpStarting(app.pid);
  const history = await app.call<SeedConversationsResult>('seedHistory', {
    organizationId: inbox.organizationId,
    conversations: 25,
    messagesEach: HISTORY_EACH,
  });
  const longThreads = await measure({
    url: app.url + PATH + QUERY,
    pid: app.pid,
    connectionHeaders,
    connections: INBOX_CONNECTIONS,
    seconds: HISTORY_SECONDS,
    warmupSeconds: 1,
  });

  // A second app instance in the service's process, which counts a page's queries: not load.
  noteSetUpStarting(app.pid);
  const [small, large] = await app.call<number[]>('countQueries', {
    token: inbox.token,
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
