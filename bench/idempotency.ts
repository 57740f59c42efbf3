/**
 * `idempotency`: what the idempotency layer costs a side-effecting POST. The same request,
 * `POST /v1/api-keys` (a transaction with two inserts), is sent with a unique `Idempotency-Key` each
 * time (a claim insert before the handler and a sealed-response update after it) and without the
 * header, against the same server in the same run; the ratio is with / without.
 *
 * The service runs in a child (bench/lib.ts `startApp`), because on a two-core machine a server
 * sharing its event loop with the load generator would measure the two fighting over one thread.
 * Phases alternate A B B A (twice) so that the table growing
 * over the run (every request creates a key) and bursts of other load weigh on both sides alike.
 * BENCH_DATABASE_URL runs it on a fresh PostgreSQL schema instead of an embedded SQLite file.
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { startApp } from './lib.ts';

const CONNECTIONS = 32;
// Each dashboard token has its own rate-limit bucket (200 a second); sixteen, two connections each,
// keep the limiter far above what the route can serve, so the bench measures the layer, not the limiter.
const TOKENS = 16;
const WARMUP_SECONDS = 2;
const PHASE_SECONDS = 2.5;
// A B B A, twice: short alternating phases spread a noisy machine's bursts over both sides.
const PHASES = [false, true, true, false, false, true, true, false];
const PATH = '/v1/api-keys';
const BODY = JSON.stringify({ kind: 'organization', mode: 'live' });

// ---------------------------------------------------------------------------------------------
// Set up through the API, then load.

async function postJson(url: string, body: unknown): Promise<{ token: string }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${url}: ${response.status} ${text}`);
  return JSON.parse(text) as { token: string };
}

/** Requests per second over `seconds`, each connection in a loop; any answer but 201 fails the bench. */
async function load(pool: Pool, tokens: string[], seconds: number, withKey: boolean): Promise<{ reqPerSec: number; requests: number }> {
  const run = randomBytes(6).toString('hex');
  let requests = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, connection) => {
      const token = tokens[connection % tokens.length]!;
      for (let i = 0; performance.now() < deadline; i++) {
        const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        if (withKey) headers['idempotency-key'] = `bench-${run}-${connection}-${i}`;
        const response = await pool.request({ path: PATH, method: 'POST', headers, body: BODY });
        const text = await response.body.text();
        if (response.statusCode !== 201) throw new Error(`POST ${PATH}: ${response.statusCode} ${text}`);
        if (withKey && response.headers['idempotency-replayed']) throw new Error('a unique key was answered as a replay');
        requests += 1;
      }
    }),
  );
  return { reqPerSec: requests / ((performance.now() - started) / 1000), requests };
}

async function main(): Promise<void> {
  // Set-up logs in TOKENS times, more than the per-address limit on /auth allows in a minute.
  const service = await startApp({ RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000' });
  const pool = new Pool(service.url, { connections: CONNECTIONS, pipelining: 1 });
  try {
    const account = { email: 'bench@example.com', password: 'correct horse battery staple' };
    await postJson(`${service.url}/auth/signup`, { ...account, organization_name: 'Bench Ltd' });
    const tokens = await Promise.all(Array.from({ length: TOKENS }, async () => (await postJson(`${service.url}/auth/login`, account)).token));

    console.log(
      `idempotency: POST ${PATH}, ${CONNECTIONS} connections over ${TOKENS} dashboard tokens, phases A B B A A B B A of ${PHASE_SECONDS} s ` +
        `after ${WARMUP_SECONDS} s of warm-up each way, store: ${service.store}`,
    );
    await load(pool, tokens, WARMUP_SECONDS, false);
    await load(pool, tokens, WARMUP_SECONDS, true);

    const totals = { without: { requests: 0, seconds: 0 }, with: { requests: 0, seconds: 0 } };
    for (const withKey of PHASES) {
      const figures = await load(pool, tokens, PHASE_SECONDS, withKey);
      const side = withKey ? totals.with : totals.without;
      side.requests += figures.requests;
      side.seconds += figures.requests / figures.reqPerSec;
      console.log(`  ${withKey ? 'with a unique Idempotency-Key' : 'without the header          '}  ${figures.reqPerSec.toFixed(0).padStart(6)} req/s`);
    }
    const withKey = totals.with.requests / totals.with.seconds;
    const without = totals.without.requests / totals.without.seconds;
    console.log('');
    console.log(`RESULT idempotency req_per_s=${withKey.toFixed(1)} baseline=${without.toFixed(1)} ratio=${(withKey / without).toFixed(3)}`);
  } finally {
    await pool.close();
    await service.stop();
  }
}

try {
  await main();
} catch (error) {
  process.exitCode = 1;
  console.error('bench idempotency failed:', error);
}
