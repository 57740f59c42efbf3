/**
 * `conversations-floor`: the least the inbox page costs on the embedded store, to read the
 * `conversations` bench's figures against. The service seeds the same inbox and answers the page;
 * then bench/serve-conversations-floor.ts answers the same page from the same SQLite file with
 * nothing but the work the answer needs (its header says what that is and what it leaves out), and
 * must answer it with the service's bytes. The three are loaded in turn, each in the same way: bare
 * Fastify sending the page's bytes (the `conversations` bench's baseline), the floor, the service.
 *
 * What it answers: whether the `conversations` target (0.08 of the bare route's requests a second)
 * is within reach of any implementation on this store, and how much of the service's cost is above
 * that floor.
 *
 * On embedded SQLite only: the floor reads the service's SQLite file.
 */
import { expectSamePage, INBOX_CONNECTIONS, INBOX_PATH, INBOX_QUERY, setUpInbox } from './inbox-setup.ts';
import { loadRow, measure, printCpuResult, printResult, printTable, runBench, startApp, startBaseline, startHelper } from './lib.ts';

const WARMUP_SECONDS = 2;
const SECONDS = 6;

await runBench('conversations-floor', async () => {
  if (process.env.BENCH_DATABASE_URL) throw new Error("conversations-floor reads the service's SQLite file: run it without BENCH_DATABASE_URL");
  const app = await startApp();
  const inbox = await setUpInbox(app);
  const { connectionHeaders, page } = inbox;

  const baseline = await startBaseline({ path: INBOX_PATH, body: page.body, contentType: page.contentType });
  await expectSamePage(baseline, inbox);
  const floor = await startHelper('serve-conversations-floor.ts', { BENCH_FLOOR_SQLITE_FILE: app.sqliteFile! });
  await expectSamePage(floor, inbox, connectionHeaders[0]);

  console.log(
    `conversations-floor: GET ${INBOX_PATH}${INBOX_QUERY}, ${INBOX_CONNECTIONS} connections (one organization key each), ` +
      `${SECONDS} s after ${WARMUP_SECONDS} s of warm-up each, ${page.body.length}-byte page`,
  );
  const load = { connections: INBOX_CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS };
  const base = await measure({ url: baseline.url + INBOX_PATH + INBOX_QUERY, pid: baseline.pid, ...load });
  await baseline.stop();
  const least = await measure({ url: floor.url + INBOX_PATH + INBOX_QUERY, pid: floor.pid, connectionHeaders, ...load });
  await floor.stop();
  const service = await measure({ url: app.url + INBOX_PATH + INBOX_QUERY, pid: app.pid, connectionHeaders, ...load });

  console.log('');
  printTable(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'],
    [loadRow('service', service), loadRow('floor', least), loadRow('baseline (bare Fastify)', base)],
  );
  console.log('');
  printResult('conversations-floor', 'req_per_s', least.reqPerSec, base.reqPerSec);
  printCpuResult('conversations-floor', least.cpuUsPerRequest, base.cpuUsPerRequest);
  // The service in the same run, against the floor: the share of the floor's rate it reaches.
  printResult('conversations-floor', 'service_req_per_s', service.reqPerSec, least.reqPerSec, 2);
  printCpuResult('conversations-floor', service.cpuUsPerRequest, least.cpuUsPerRequest, 'service_server_cpu_us_per_req');
});
