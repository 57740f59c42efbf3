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
import { cpuUsPer, printCpuResult, startApp, startCpuClock } from './lib.ts';

const CONNECTIONS = 32;
// Sixteen dashboard sessions, two connections each, as several members would call. The limiter never
// caps the load whatever the sessions: startApp raises every bucket.
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
  // Set-up logs in TOKENS times, more than the spec's per-address limit on /auth allows in a minute:
  // startApp raises that one too.
  const service = await startApp();
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

    // The server's CPU time is summed over each side's phases (undefined once a reading failed).
    const totals = {
      without: { requests: 0, seconds: 0, cpuSeconds: 0 as number | undefined },
      with: { requests: 0, seconds: 0, cpuSeconds: 0 as number | undefined },
    };
    for (const withKey of PHASES) {
      const cpu = startCpuClock(service.pid);
      const figures = await load(pool, tokens, PHASE_SECONDS, withKey);
      const cpuSeconds = cpu.seconds();
      const side = withKey ? totals.with : totals.without;
      side.requests += figures.requests;
      side.seconds += figures.requests / figures.reqPerSec;
      side.cpuSeconds = side.cpuSeconds === undefined || cpuSeconds === undefined ? undefined : side.cpuSeconds + cpuSeconds;
      const cpuUs = cpuUsPer(figures.requests, 0, cpuSeconds);
      console.log(
        `  ${withKey ? 'with a unique Idempotency-Key' : 'without the header          '}  ${figures.reqPerSec.toFixed(0).padStart(6)} req/s` +
          `  ${cpuUs === undefined ? 'n/a' : cpuUs.toFixed(0).padStart(5)} server CPU µs/req`,
      );
    }
    const withKey = totals.with.requests / totals.with.seconds;
    const without = totals.without.requests / totals.without.seconds;
    console.log('');
    console.log(`RESULT idempotency req_per_s=${withKey.toFixed(1)} baseline=${without.toFixed(1)} ratio=${(withKey / without).toFixed(3)}`);
    printCpuResult('idempotency', cpuUsPer(totals.with.requests, 0, totals.with.cpuSeconds), cpuUsPer(totals.without.requests, 0, totals.without.cpuSeconds));
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
