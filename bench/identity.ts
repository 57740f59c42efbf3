/**
 * `identity`: GET /v1/identity with an organization API key, the cheapest authenticated call, so
 * its figures are the fixed cost every /v1 request pays (routing, hooks, credential lookup, rate
 * limit, one read, response serialization) against bare Fastify sending the very same bytes.
 */
import { mib, measure, printCpuResult, printResult, printTable, requestJson, runBench, startApp, startBaseline, loadRow } from './lib.ts';

const CONNECTIONS = 50;
const SECONDS = 10;
const WARMUP_SECONDS = 2;
const PATH = '/v1/identity';

await runBench('identity', async () => {
  const app = await startApp();

  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  // One key per connection, as many clients would call; the keys are alike but for their id, so every
  // answer has the captured size. The limiter never caps the load (startApp raises every bucket).
  const keys: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const created = await requestJson<{ key: string }>(`${app.url}/v1/api-keys`, {
      token: signup.token,
      body: { kind: 'organization', mode: 'live', name: `bench ${i}` },
      expectStatus: 201,
    });
    keys.push(created.key);
  }
  const connectionHeaders = keys.map((key) => ({ authorization: `Bearer ${key}` }));

  const sample = await fetch(app.url + PATH, { headers: connectionHeaders[0] });
  const body = Buffer.from(await sample.arrayBuffer());
  const contentType = sample.headers.get('content-type') ?? '';
  if (sample.status !== 200) throw new Error(`GET ${PATH}: ${sample.status} ${body.toString()}`);

  const baseline = await startBaseline({ path: PATH, body, contentType });
  const check = await fetch(baseline.url + PATH);
  if (!Buffer.from(await check.arrayBuffer()).equals(body) || check.headers.get('content-type') !== contentType) {
    throw new Error('the baseline does not answer with the same bytes and content type as the service');
  }

  console.log(
    `identity: GET ${PATH}, ${CONNECTIONS} connections (one organization key each), ${SECONDS} s after ` +
      `${WARMUP_SECONDS} s of warm-up, ${body.length}-byte body, store: ${app.store}`,
  );
  const load = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS };
  const base = await measure({ url: baseline.url + PATH, pid: baseline.pid, ...load });
  const baselineRss = await baseline.rss();
  await baseline.stop();
  const rssBefore = await app.rss();
  const real = await measure({ url: app.url + PATH, pid: app.pid, connectionHeaders, ...load });
  const rss = await app.rss();

  console.log('');
  printTable(['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'], [loadRow('service', real), loadRow('baseline (bare Fastify)', base)]);
  console.log('');
  printResult('identity', 'req_per_s', real.reqPerSec, base.reqPerSec);
  printResult('identity', 'p99_ms', real.p99Ms, base.p99Ms, 2);
  printCpuResult('identity', real.cpuUsPerRequest, base.cpuUsPerRequest);
  console.log(`server RSS after the run: ${mib(rss)} MiB (before it: ${mib(rssBefore)} MiB; bare Fastify after its run: ${mib(baselineRss)} MiB)`);
});
