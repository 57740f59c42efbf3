/**
 * `pacing`: outbound pacing end to end (docs/pacing.md). The sandbox provider runs in a child process
 * and notes when each POST to `/{phone_number_id}/messages` arrives; the cloud adapter, wrapped in
 * `withPacing` with a 100-a-second ceiling, fires a burst of 2,000 template sends at one number, all
 * at once. The figures are the sandbox's: the most arrivals in any one-second window (the ceiling is
 * the baseline) and the time from the first arrival to the last (2,000 at 100 a second ideally take
 * 19.99 s: the first at 0, the last at 1,999 × 10 ms).
 *
 * With BENCH_REDIS_URL set, a second scenario shares the ceiling through that Redis between two
 * processes: this one and a sender child, each with its own pacer and Redis connection, each firing
 * 1,000 of the 2,000 at the same moment.
 *
 * BENCH_PACING_SLACK_MS sets the pacer's slackMs (default 25; 0 spaces sends exactly 1 / ceiling apart).
 *
 * The CPU figure: the sending processes' CPU time during the burst, per send, against the same
 * 2,000 sends through the same adapter without the pacer, ten at a time (what pacing adds per send).
 *
 * This file is also the two children (BENCH_PACING_ROLE `sandbox` or `sender`): bench/lib.ts forks a
 * script by name, and keeping them here keeps the bench in one file.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import Fastify from 'fastify';
import { request } from 'undici';
import { systemClock } from '../src/lib/clock.ts';
import { createPacer, withPacing, type Pacer } from '../src/provider/pacing.ts';
import { isProviderError, type OutboundMessage, type ProviderCredentials } from '../src/provider/provider.ts';
import { migrateToLatest, openStore, storeFor } from '../src/db/connect.ts';
import { createSandboxProvider, type SandboxTables } from '../src/provider/sandbox/index.ts';
import { createCloudProvider, type CloudProvider } from '../src/provider/whatsapp/cloud-adapter.ts';
import { printCpuResult, printResult, printTable, reportToParent, runBench, startCpuClock, startHelper, type BenchServer } from './lib.ts';

const BURST = 2_000;
const CEILING = 100;
const IDEAL_SECONDS = (BURST - 1) / CEILING;
const WARMUP_SENDS = 50;
// The CPU baseline: the same sends without the pacer, this many in flight at once.
const UNPACED_CONCURRENCY = 10;
const APP_SECRET = 'bench-app-secret';
const USER = '15551234567';
// The whole burst queues in the pacer at once, 20 s deep: past the default maximum wait (10 s), which
// is sized for a job queue that hands the pacer a few sends at a time.
const MAX_WAIT_MS = 30_000;
const MESSAGE: OutboundMessage = { to: USER, type: 'template', name: 'hello_world', language: 'en_US' };
// Epoch milliseconds with sub-millisecond resolution: comparable between processes on one machine.
const now = () => performance.timeOrigin + performance.now();

interface BurstFigures {
  /** When this process fired its sends, when the last one was answered, and each call's start. */
  firedAt: number;
  doneAt: number;
  issuedAt: number[];
  /** Throttle answers from the sandbox, each retried by withPacing. */
  throttled: number;
}

interface BurstArgs {
  sandboxUrl: string;
  credentials: ProviderCredentials;
  count: number;
  redisUrl?: string;
  keyPrefix: string;
  /** The pacer's slackMs; undefined keeps its default. */
  slackMs?: number;
}

function cloudProvider(sandboxUrl: string): CloudProvider {
  return createCloudProvider({ baseUrl: `${sandboxUrl}/sandbox/graph`, version: 'v24.0', appId: 'bench', appSecret: APP_SECRET });
}

interface Sender {
  cloud: CloudProvider;
  redis: Redis | undefined;
  pacer: Pacer;
}

let sender: Sender | undefined;

/**
 * Opens this process's sender and warms it with unpaced sends, thrown away (they compile the send
 * path and open the pool's connections), and with Redis a few acquires on other keys (they load the
 * script and give the pacer quick answers to estimate the clocks' offset from).
 */
async function warmUp(args: BurstArgs): Promise<null> {
  const cloud = cloudProvider(args.sandboxUrl);
  const redis = args.redisUrl === undefined ? undefined : new Redis(args.redisUrl, { connectTimeout: 2000, maxRetriesPerRequest: 1 });
  // One pacer for the warm-up and the burst, as a process keeps one: with Redis, its estimate of the
  // two clocks' offset comes from the warm-up's quick answers, not only from the burst's thousand.
  const pacer = createPacer({ redis, keyPrefix: args.keyPrefix, maxWaitMs: MAX_WAIT_MS, ...(args.slackMs === undefined ? {} : { slackMs: args.slackMs }) });
  sender = { cloud, redis, pacer };
  if (redis) for (let i = 0; i < 10; i++) await pacer.acquire(`warm-up-${i}`, CEILING);
  await warmSends(cloud, args.credentials);
  return null;
}

/** Unpaced sends, ten at a time, thrown away: they compile the send path and open the pool's connections. */
async function warmSends(cloud: CloudProvider, credentials: ProviderCredentials): Promise<void> {
  for (let i = 0; i < WARMUP_SENDS; i += 10) await Promise.all(Array.from({ length: 10 }, () => cloud.sendMessage(credentials, MESSAGE)));
}

/**
 * The baseline of the CPU figure: `count` sends through the same cloud adapter without the pacer,
 * UNPACED_CONCURRENCY at a time, from this process; answers this process's CPU µs per send. Any
 * failed send (a non-2xx from the sandbox) fails the bench.
 */
async function unpacedCpuUsPerSend(sandboxUrl: string, credentials: ProviderCredentials, count: number): Promise<number | undefined> {
  const cloud = cloudProvider(sandboxUrl);
  try {
    await warmSends(cloud, credentials);
    const cpu = startCpuClock(process.pid);
    let next = 0;
    await Promise.all(
      Array.from({ length: UNPACED_CONCURRENCY }, async () => {
        while (next < count) {
          next++;
          await cloud.sendMessage(credentials, MESSAGE);
        }
      }),
    );
    return cpu.usPer(count);
  } finally {
    await cloud.close();
  }
}

/** `count` paced sends fired at once from this process; fails if any send failed. */
async function burst(args: BurstArgs): Promise<BurstFigures> {
  if (!sender) throw new Error('warm the sender up first');
  const { cloud, redis, pacer } = sender;
  try {
    const issuedAt: number[] = [];
    let throttled = 0;
    // Inside the pacing: sees every call the pacer let through, retries included.
    const observed: CloudProvider = {
      ...cloud,
      async sendMessage(credentials, message) {
        issuedAt.push(now());
        try {
          return await cloud.sendMessage(credentials, message);
        } catch (error) {
          if (isProviderError(error) && error.category === 'throttled') throttled++;
          throw error;
        }
      },
    };
    const provider = withPacing(observed, { pacer, ceilingOf: () => CEILING });
    const firedAt = now();
    const outcomes = await Promise.allSettled(Array.from({ length: args.count }, () => provider.sendMessage(args.credentials, MESSAGE)));
    const doneAt = now();
    const failures = outcomes.filter((outcome) => outcome.status === 'rejected');
    if (failures.length > 0) throw new Error(`${failures.length} of ${args.count} sends failed; the first: ${String(failures[0]!.reason)}`);
    return { firedAt, doneAt, issuedAt, throttled };
  } finally {
    sender = undefined;
    await cloud.close();
    redis?.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// The children.

async function serveSandbox(): Promise<void> {
  const store = openStore({ sqliteFile: ':memory:' });
  await migrateToLatest(store);
  const sandbox = createSandboxProvider({ store: storeFor<SandboxTables>(store), clock: systemClock, appSecret: APP_SECRET, autoStatus: false });
  const app = Fastify();
  let arrivals: number[] = [];
  // Before the sandbox's own hooks: the moment the request reached the provider, throttled or not.
  app.addHook('onRequest', async (request) => {
    if (request.method === 'POST' && request.url.split('?')[0]!.endsWith('/messages')) arrivals.push(now());
  });
  await app.register(sandbox.plugin, { prefix: '/sandbox' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the sandbox is not listening on a port');
  reportToParent(
    address.port,
    async () => {
      sandbox.close();
      await app.close();
    },
    {
      reset: async () => {
        arrivals = [];
        return null;
      },
      arrivals: async () => arrivals,
    },
  );
}

function serveSender(): void {
  reportToParent(0, async () => undefined, { warmUp: (args: BurstArgs) => warmUp(args), burst: (args: BurstArgs) => burst(args) });
}

// ---------------------------------------------------------------------------------------------
// The figures.

/** The most of `times` (ms, sorted) inside any window [t, t + 1000). */
function maxInOneSecond(times: number[]): number {
  let most = 0;
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + 1000) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** The shortest time covered by CEILING + 1 consecutive sends: at least 1,000 ms keeps every window at the ceiling. */
function tightestSpan(times: number[]): number {
  let tightest = Number.POSITIVE_INFINITY;
  for (let i = 0; i + CEILING < times.length; i++) tightest = Math.min(tightest, times[i + CEILING]! - times[i]!);
  return tightest;
}

function percentiles(values: number[]): { p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p99: sorted[Math.floor(sorted.length * 0.99)]!, max: sorted.at(-1)! };
}

interface Scenario {
  name: string;
  /** CPU µs per send of the sending processes (this one, and the sender child with Redis) during the burst. */
  cpuUsPerSend: number | undefined;
  arrivals: number[];
  issued: number[];
  firedAt: number;
  doneAt: number;
  throttled: number;
}

function figures(scenario: Scenario) {
  const arrivals = [...scenario.arrivals].sort((a, b) => a - b);
  const issued = [...scenario.issued].sort((a, b) => a - b);
  return {
    sends: arrivals.length,
    maxWindow: maxInOneSecond(arrivals),
    maxWindowIssued: maxInOneSecond(issued),
    tightestMs: tightestSpan(arrivals),
    // Sends arrive in the order they leave, near enough: the k-th arrival belongs to the k-th issue.
    pathMs: arrivals.length === issued.length ? percentiles(arrivals.map((at, k) => at - issued[k]!)) : undefined,
    burstSeconds: (arrivals.at(-1)! - arrivals[0]!) / 1000,
    firedToDoneSeconds: (scenario.doneAt - scenario.firedAt) / 1000,
  };
}

/**
 * The sandbox's own throughput ceiling (its `throughput_mps` behaviour), raised far above ours so that
 * only the pacer limits the burst. A sandbox without that behaviour refuses the field: no ceiling.
 */
async function raiseSandboxCeiling(sandboxUrl: string): Promise<string> {
  let refusal = '';
  for (const perSecond of [1_000_000, 10_000, 1_000]) {
    const response = await request(`${sandboxUrl}/sandbox/control/behaviour`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ throughput_mps: perSecond }),
    });
    const text = await response.body.text();
    if (response.statusCode === 200) return `the sandbox's own throughput ceiling raised to ${perSecond} a second`;
    refusal = `${response.statusCode} ${text.slice(0, 200)}`;
  }
  return `the sandbox refused a throughput_mps behaviour (${refusal}): it has no ceiling of its own`;
}

async function connect(sandboxUrl: string): Promise<ProviderCredentials> {
  const cloud = cloudProvider(sandboxUrl);
  try {
    const exchanged = await cloud.exchangeCode('bench-signup-code');
    if (exchanged.wabaId === undefined || exchanged.phoneNumberId === undefined) throw new Error('the sandbox connection came without its ids');
    return { accessToken: exchanged.accessToken, wabaId: exchanged.wabaId, phoneNumberId: exchanged.phoneNumberId };
  } finally {
    await cloud.close();
  }
}

/**
 * Each sender is a pair: its warm-up, then its burst, fired together once every sender is warm.
 * `pids`: the processes the senders run in, whose CPU time during the bursts is the scenario's.
 */
async function run(
  sandbox: BenchServer,
  name: string,
  pids: number[],
  senders: { warmUp(): Promise<unknown>; burst(): Promise<BurstFigures> }[],
): Promise<Scenario> {
  await Promise.all(senders.map((each) => each.warmUp()));
  await sandbox.call('reset');
  const cpu = startCpuClock(...pids);
  const results = await Promise.all(senders.map((each) => each.burst()));
  const cpuUsPerSend = cpu.usPer(BURST);
  const arrivals = await sandbox.call<number[]>('arrivals');
  return {
    name,
    cpuUsPerSend,
    arrivals,
    issued: results.flatMap((result) => result.issuedAt),
    firedAt: Math.min(...results.map((result) => result.firedAt)),
    doneAt: Math.max(...results.map((result) => result.doneAt)),
    throttled: results.reduce((sum, result) => sum + result.throttled, 0),
  };
}

function slackFromEnv(): number | undefined {
  const value = process.env.BENCH_PACING_SLACK_MS;
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`BENCH_PACING_SLACK_MS must be a number of milliseconds, 0 or more (got "${value}")`);
  return parsed;
}

async function main(): Promise<void> {
  const redisUrl = process.env.BENCH_REDIS_URL || undefined;
  const slackMs = slackFromEnv();
  const sandbox = await startHelper('pacing.ts', { BENCH_PACING_ROLE: 'sandbox' });
  console.log(
    `pacing: ${BURST} template sends fired at once at one number with a ceiling of ${CEILING} a second, cloud adapter → sandbox provider in another process`,
  );
  console.log(await raiseSandboxCeiling(sandbox.url));
  const credentials = await connect(sandbox.url);
  const args = { sandboxUrl: sandbox.url, credentials, ...(slackMs === undefined ? {} : { slackMs }) };
  if (slackMs !== undefined) console.log(`BENCH_PACING_SLACK_MS: slots ${((1000 + slackMs) / CEILING).toFixed(2)} ms apart instead of the default`);

  const scenarios: Scenario[] = [];
  const inMemory: BurstArgs = { ...args, count: BURST, keyPrefix: 'bench:pacing' };
  scenarios.push(await run(sandbox, 'memory, 1 process', [process.pid], [{ warmUp: () => warmUp(inMemory), burst: () => burst(inMemory) }]));

  if (redisUrl) {
    const keyPrefix = `bench:pacing:${randomBytes(6).toString('hex')}`;
    const child = await startHelper('pacing.ts', { BENCH_PACING_ROLE: 'sender' });
    const half: BurstArgs = { ...args, count: BURST / 2, redisUrl, keyPrefix };
    try {
      scenarios.push(
        await run(
          sandbox,
          'Redis, 2 processes',
          [process.pid, child.pid],
          [
            { warmUp: () => warmUp(half), burst: () => burst(half) },
            { warmUp: () => child.call('warmUp', half), burst: () => child.call<BurstFigures>('burst', half) },
          ],
        ),
      );
    } finally {
      await child.stop();
      const redis = new Redis(redisUrl, { connectTimeout: 2000, maxRetriesPerRequest: 1 });
      try {
        const keys = await redis.keys(`${keyPrefix}:*`);
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        redis.disconnect();
      }
    }
  } else {
    console.log('BENCH_REDIS_URL not set: the two-process scenario over Redis is skipped');
  }
  const unpacedCpuUs = await unpacedCpuUsPerSend(sandbox.url, credentials, BURST);

  console.log('');
  const rows = scenarios.map((scenario) => ({ scenario, ...figures(scenario) }));
  const us = (value: number | undefined) => value?.toFixed(0) ?? 'n/a';
  printTable(
    [
      'scenario',
      'sends',
      'max in any 1 s',
      'max issued in 1 s',
      `tightest ${CEILING + 1} ms`,
      'path p99 / max ms',
      'first→last s',
      'ideal s',
      'ratio',
      'fired→done s',
      'throttled',
      'sender CPU µs/send',
    ],
    rows.map((row) => [
      row.scenario.name,
      String(row.sends),
      String(row.maxWindow),
      String(row.maxWindowIssued),
      row.tightestMs.toFixed(1),
      row.pathMs ? `${row.pathMs.p99.toFixed(1)} / ${row.pathMs.max.toFixed(1)}` : 'n/a',
      row.burstSeconds.toFixed(2),
      IDEAL_SECONDS.toFixed(2),
      (row.burstSeconds / IDEAL_SECONDS).toFixed(3),
      row.firedToDoneSeconds.toFixed(2),
      String(row.scenario.throttled),
      us(row.scenario.cpuUsPerSend),
    ]),
  );
  console.log('');
  console.log(
    `max in any 1 s: arrivals at the sandbox in any window [t, t + 1 s); issued: the same for the calls leaving the pacer. ` +
      `tightest ${CEILING + 1}: the shortest time ${CEILING + 1} consecutive arrivals took (1,000 ms or more keeps every window at ${CEILING}). ` +
      'path: from leaving the pacer to arriving at the sandbox. first→last: first arrival to last; fired→done: the sends fired to the last answer. ' +
      `sender CPU: the sending processes' CPU time during the burst per send; without the pacer (${UNPACED_CONCURRENCY} at a time, this process): ` +
      `${us(unpacedCpuUs)} µs a send.`,
  );
  // A throttle answer is a non-2xx from the provider: with the sandbox's own ceiling out of the way,
  // the burst then measured withPacing's retries, not the pacing.
  const throttled = rows.filter((row) => row.scenario.throttled > 0).map((row) => `${row.scenario.name}: ${row.scenario.throttled}`);
  if (throttled.length > 0) throw new Error(`the sandbox answered throttle errors (${throttled.join('; ')})`);
  console.log('');
  for (const row of rows) {
    const suffix = row.scenario.name.startsWith('Redis') ? '_redis' : '';
    printResult('pacing', `max_per_second_window${suffix}`, row.maxWindow, CEILING, 0);
    printResult('pacing', `burst_seconds${suffix}`, row.burstSeconds, IDEAL_SECONDS, 2);
    printCpuResult('pacing', row.scenario.cpuUsPerSend, unpacedCpuUs, `server_cpu_us_per_req${suffix}`);
  }
  for (const row of rows) {
    // Reported, not failed: beyond the pacer's slack, a stall of either process on a busy machine
    // bunches arrivals at the sandbox, and the table's issued column tells the two apart.
    if (row.maxWindow > CEILING)
      console.log(`${row.scenario.name}: ${row.maxWindow} arrivals in one second, over the ceiling of ${CEILING} (issued: ${row.maxWindowIssued})`);
  }
}

const role = process.env.BENCH_PACING_ROLE;
if (role === 'sandbox') await serveSandbox();
else if (role === 'sender') serveSender();
else await runBench('pacing', main);
