/**
 * `runtime`: what the pass-through surface costs. GET /runtime/v24.0/{phone_number_id} with a
 * connection key (authentication, rate limit, the connection read and its token unsealed, the relay's
 * loopback call to the sandbox, the answer relayed) against calling the same sandbox endpoint
 * directly with a business token. Both run in the one service process (the sandbox is mounted at
 * /sandbox), so the ratio is the relay's overhead over the provider call it wraps.
 */
import { mib, measure, printCpuResult, printResult, printTable, requestJson, runBench, startApp, loadRow } from './lib.ts';

const CONNECTIONS = 50;
const SECONDS = 10;
const WARMUP_SECONDS = 2;
// Known to the bench so that it can exchange a signup code at the sandbox itself, as the service does.
const APP_SECRET = 'bench-runtime-app-secret';

await runBench('runtime', async () => {
  const app = await startApp({ PROVIDER_APP_SECRET: APP_SECRET });

  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: 'correct horse battery staple', organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  const connection = await requestJson<{ id: string; phone_number_id: string }>(`${app.url}/v1/connections`, {
    token: signup.token,
    body: { code: 'bench-runtime', name: 'Bench line' },
    expectStatus: 201,
  });
  // One key per load connection, as many clients would call (startApp raises every bucket, so the
  // limiter never caps the load).
  const keys: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const created = await requestJson<{ key: string }>(`${app.url}/v1/api-keys`, {
      token: signup.token,
      body: { kind: 'connection', mode: 'live', connection_id: connection.id, name: `bench ${i}` },
      expectStatus: 201,
    });
    keys.push(created.key);
  }
  const connectionHeaders = keys.map((key) => ({ authorization: `Bearer ${key}` }));

  // The direct caller: a number and business token of its own, from the sandbox's code exchange.
  const exchange = new URLSearchParams({ client_id: 'bench', client_secret: APP_SECRET, code: 'bench-direct' });
  const direct = await requestJson<{ access_token: string; sandbox: { phone_number_id: string } }>(
    `${app.url}/sandbox/graph/v24.0/oauth/access_token?${exchange.toString()}`,
  );
  const directPath = `/sandbox/graph/v24.0/${direct.sandbox.phone_number_id}`;
  const directHeaders = { authorization: `Bearer ${direct.access_token}` };
  const runtimePath = `/runtime/v24.0/${connection.phone_number_id}`;

  const relayed = await fetch(app.url + runtimePath, { headers: connectionHeaders[0] });
  const relayedBody = await relayed.text();
  if (relayed.status !== 200) throw new Error(`GET ${runtimePath}: ${relayed.status} ${relayedBody}`);
  const straight = await fetch(app.url + directPath, { headers: directHeaders });
  const straightBody = await straight.text();
  if (straight.status !== 200) throw new Error(`GET ${directPath}: ${straight.status} ${straightBody}`);

  console.log(
    `runtime: GET ${runtimePath.replace(connection.phone_number_id, '{pn}')} (${CONNECTIONS} connection keys) vs GET ` +
      `${directPath.replace(direct.sandbox.phone_number_id, '{pn}')} with the business token, ${CONNECTIONS} connections, ` +
      `${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, ${relayedBody.length}-byte node, store: ${app.store}`,
  );
  const load = { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, pid: app.pid };
  const base = await measure({ url: app.url + directPath, headers: directHeaders, ...load });
  const rssBefore = await app.rss();
  const real = await measure({ url: app.url + runtimePath, connectionHeaders, ...load });
  const rss = await app.rss();

  console.log('');
  printTable(['target', 'req/s', 'p50 ms', 'p99 ms', 'mean ms', 'server CPU µs/req'], [loadRow('runtime (relayed)', real), loadRow('sandbox (direct)', base)]);
  console.log('');
  console.log(`server RSS after the run: ${mib(rss)} MiB (before the runtime run: ${mib(rssBefore)} MiB)`);
  printResult('runtime', 'p99_ms', real.p99Ms, base.p99Ms, 2);
  printResult('runtime', 'req_per_s', real.reqPerSec, base.reqPerSec);
  printCpuResult('runtime', real.cpuUsPerRequest, base.cpuUsPerRequest);
});
