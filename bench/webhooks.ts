/**
 * `webhooks`: outbound webhook delivery, end to end. Events are emitted inside the service's process
 * (bench/app-commands.ts, as a change in the service would emit them: the event and one delivery
 * job per subscribed endpoint in one transaction, committed as a write request's is), the service's
 * own worker delivers them, and loopback receivers in a third process note when each arrives.
 * Against the same number of raw undici POSTs of the same bytes, at the worker's concurrency, from
 * this process to the same receivers: what the network and the receivers cost without the service.
 *
 * Scenarios: a steady rate to one receiver, for latency; a burst to one receiver; a burst fanned out
 * to ten receivers (every event goes to all ten endpoints). Both sides are warmed to a steady state
 * first, and the bursts and their baselines run in turn for up to three rounds, reported as medians;
 * then the burst once more, emitted with the worker stopped and delivered after, to split its CPU.
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead, and then the
 * steady rate and the burst again with a second worker process on the same schema (two workers
 * sharing the queue).
 *
 * The bursts are 2,000 deliveries each by default, not the 10,000 asked for: the worker delivers
 * 200–500 a second on this machine, so 10,000 twice would take two minutes, past the minute a bench
 * may take. BENCH_WEBHOOK_EVENTS=10000 runs the full size. BENCH_WORKER_CONCURRENCY and
 * BENCH_WORKER_POLL_MS run a worker with other options than the service's (16, 100 ms).
 */
import { Agent } from 'undici';
import type { EmitEventsResult, JobCounts, StartWorkerArgs } from './app-commands.ts';
import {
  middleOf,
  percentile,
  positiveIntegerFromEnv,
  printCpuResult,
  printResult,
  printTable,
  requestJson,
  runBench,
  startApp,
  startCpuClock,
  startHelper,
  type AppServer,
  type BenchServer,
} from './lib.ts';
import { perfDirectory, startPerf, type PerfRecording } from './perf-profile.ts';
import type { ReceiptSummary } from './serve-receivers.ts';
import { arrivals, rawPosts } from './webhook-load.ts';

const BURST_EVENTS = positiveIntegerFromEnv('BENCH_WEBHOOK_EVENTS') ?? 2_000;
const FANOUT_RECEIVERS = 10;
// Every event fans out to all ten endpoints, so a tenth of the events make as many deliveries as the
// burst to one receiver, and the two rates compare.
const FANOUT_EVENTS = Math.max(1, Math.round(BURST_EVENTS / FANOUT_RECEIVERS));
// A burst comes from many requests at once: on PostgreSQL, concurrent emits share their commits'
// flushes, where one emit after another waits for a flush each (about 120 a second here).
const BURST_EMIT_CONCURRENCY = 8;
const STEADY_PER_SECOND = 500;
const STEADY_SECONDS = 3;
// Warm-up (below): rounds of both bursts, about 12,000 deliveries in all, then the steady rate for
// longer than an idle connection lives (undici closes one after 3 s idle: a Node receiver's
// keep-alive hint of 5 s less its 2 s margin).
// Rounds stop early past WARM_UP_BUDGET_MS (at least one runs), so a slow store or machine keeps the
// bench within its minute.
const WARM_UP_ROUNDS = Math.max(1, Math.round(6_000 / BURST_EVENTS));
const WARM_UP_BUDGET_MS = 10_000;
const WARM_UP_STEADY_SECONDS = 5;
// The bursts and their baselines are measured in rounds (below); another round starts only within
// the budget, so a slow store or machine keeps the bench within its minute.
const MEASURED_ROUNDS = 3;
const MEASURED_ROUNDS_BUDGET_MS = 5_000;
// Generous (a floor of 100 deliveries a second): a scenario that stalls fails the bench with what had
// arrived, instead of hanging it.
const ARRIVAL_TIMEOUT_MS = Math.max(50_000, BURST_EVENTS * 10);
const PASSWORD = 'correct horse battery staple';
const PERF_ATTACH_MS = 1_000;

interface Scenario {
  name: string;
  deliveries: number;
  deliveriesPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * CPU time of the sending side per delivery, in microseconds: the service process (emitting,
   * queueing, delivering, recording) or, for the baseline, this process (undici alone).
   */
  cpuUsPerDelivery: number | undefined;
  /** How long emitting took, for the service; undefined for the baseline. */
  emitMs?: number;
}

/**
 * The median of repeated runs of one scenario, each figure taken apart (the rate's median run need
 * not be the CPU's); the latencies are those of the run with the median rate.
 */
function medianOf(runs: Scenario[]): Scenario {
  const byRate = middleOf([...runs].sort((a, b) => a.deliveriesPerSec - b.deliveriesPerSec));
  const cpus = runs.flatMap((run) => (run.cpuUsPerDelivery === undefined ? [] : [run.cpuUsPerDelivery])).sort((a, b) => a - b);
  return { ...byRate, cpuUsPerDelivery: cpus.length === runs.length ? middleOf(cpus) : undefined };
}

/** An organization of its own (so scenarios never share endpoints), subscribed at `urls`. */
async function organizationWithEndpoints(app: AppServer, email: string, urls: string[]): Promise<string> {
  const signup = await requestJson<{ token: string; organization: { id: string } }>(`${app.url}/auth/signup`, {
    body: { email, password: PASSWORD, organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  for (const url of urls) {
    await requestJson(`${app.url}/v1/webhook-endpoints`, { token: signup.token, body: { url, events: ['contact.created'] }, expectStatus: 201 });
  }
  return signup.organization.id;
}

/** Emits in the service and waits until every delivery has arrived. */
async function deliver(
  app: BenchServer,
  receivers: BenchServer,
  name: string,
  options: {
    organizationId: string;
    events: number;
    endpoints: number;
    perSecond?: number;
    emitConcurrency?: number;
    workers?: BenchServer[];
    warmUp?: boolean;
  },
): Promise<Scenario> {
  const expected = options.events * options.endpoints;
  await receivers.call('reset');
  // Every process that sends: the service, and a second worker process when there is one.
  const cpu = startCpuClock(app.pid, ...(options.workers ?? []).map((worker) => worker.pid));
  // Under BENCH_PERF the service's process is profiled for each measured scenario (a second worker's is not).
  const perfDir = options.warmUp ? undefined : perfDirectory();
  const perf = perfDir ? startPerf(perfDir, app.pid, `pid${app.pid}-webhooks-${name.replace(/\W+/g, '-')}`) : undefined;
  const [emitted, arrived] = await Promise.all([
    app.call<EmitEventsResult>('emitEvents', {
      organizationId: options.organizationId,
      count: options.events,
      perSecond: options.perSecond,
      concurrency: options.emitConcurrency,
    }),
    arrivals(receivers, name, expected, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: true }),
  ]);
  const cpuUsPerDelivery = cpu.usPer(expected);
  await perf?.stop();
  return {
    name,
    deliveries: expected,
    // From the first emit to the last arrival: the whole pipeline, as a customer would see it.
    deliveriesPerSec: expected / ((arrived.lastAt - emitted.startedAt) / 1000),
    p50Ms: percentile(arrived.latenciesMs, 0.5),
    p99Ms: percentile(arrived.latenciesMs, 0.99),
    maxMs: arrived.latenciesMs.at(-1) ?? Number.NaN,
    cpuUsPerDelivery,
    emitMs: emitted.finishedAt - emitted.startedAt,
  };
}

interface Phases {
  /** The service's CPU per event while the events were emitted and queued, the worker stopped. */
  emitUsPerEvent: number | undefined;
  /** Its CPU per delivery while the worker delivered them from the full queue. */
  deliverUsPerDelivery: number | undefined;
  deliveriesPerSec: number;
}

/**
 * The burst to one receiver in two phases, to say where a delivery's CPU goes: every event emitted
 * and queued with the worker stopped, then delivered from a full queue (claims of a whole batch,
 * which a burst that races its emits does not always get).
 */
async function emitThenDeliver(app: BenchServer, receivers: BenchServer, organizationId: string, workerOptions: StartWorkerArgs): Promise<Phases> {
  await receivers.call('reset');
  await app.call('stopWorker');
  // Under BENCH_PERF each phase is profiled on its own.
  const perfDir = perfDirectory();
  // perf takes a moment to attach, and each phase is over in a fraction of a second.
  const attached = (recording: PerfRecording | undefined) => recording && new Promise((resolve) => setTimeout(resolve, PERF_ATTACH_MS));
  let perf = perfDir ? startPerf(perfDir, app.pid, `pid${app.pid}-webhooks-emitting`) : undefined;
  await attached(perf);
  const emitting = startCpuClock(app.pid);
  await app.call<EmitEventsResult>('emitEvents', { organizationId, count: BURST_EVENTS, concurrency: BURST_EMIT_CONCURRENCY });
  const emitUsPerEvent = emitting.usPer(BURST_EVENTS);
  await perf?.stop();
  perf = perfDir ? startPerf(perfDir, app.pid, `pid${app.pid}-webhooks-delivering`) : undefined;
  await attached(perf);
  const delivering = startCpuClock(app.pid);
  const started = Date.now();
  await app.call('startWorker', workerOptions);
  const arrived = await arrivals(receivers, 'emitted, then delivered', BURST_EVENTS, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: true });
  const deliverUsPerDelivery = delivering.usPer(BURST_EVENTS);
  await perf?.stop();
  return { emitUsPerEvent, deliverUsPerDelivery, deliveriesPerSec: BURST_EVENTS / ((arrived.lastAt - started) / 1000) };
}

async function baseline(
  agent: Agent,
  receivers: BenchServer,
  name: string,
  options: { urls: string[]; total: number; concurrency: number; sample: NonNullable<ReceiptSummary['sample']>; warmUpPosts: number },
): Promise<Scenario> {
  // What the sender itself sets, plus the service's own headers; undici adds host and length.
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(options.sample.headers)) {
    if (header === 'content-type' || header === 'user-agent' || header.startsWith('service-')) headers[header] = value;
  }
  // Warmed up as the service was, with as many POSTs as its warm-up delivered (on a shape's first
  // round). undici in this process warms as slowly as the service: on one machine the raw rate to one
  // receiver was 7,700–11,400 a second after 2,000 POSTs, 14,000 after 6,000, 32,000–35,000 after
  // 10,000 and more.
  if (options.warmUpPosts > 0) await rawPosts(agent, { ...options, total: options.warmUpPosts }, options.sample.body, headers);
  await receivers.call('reset');
  const cpu = startCpuClock(process.pid);
  const ms = await rawPosts(agent, options, options.sample.body, headers);
  const cpuUsPerDelivery = cpu.usPer(options.total);
  await arrivals(receivers, name, options.total, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: false });
  // Every request's round trip is part of `ms`; per-request latency would only repeat the receiver's.
  return {
    name,
    deliveries: options.total,
    deliveriesPerSec: options.total / (ms / 1000),
    p50Ms: Number.NaN,
    p99Ms: Number.NaN,
    maxMs: Number.NaN,
    cpuUsPerDelivery,
  };
}

await runBench('webhooks', async () => {
  const workerOptions: StartWorkerArgs = {};
  const concurrency = positiveIntegerFromEnv('BENCH_WORKER_CONCURRENCY');
  const pollMs = positiveIntegerFromEnv('BENCH_WORKER_POLL_MS');
  if (concurrency !== undefined) workerOptions.concurrency = concurrency;
  if (pollMs !== undefined) workerOptions.pollMs = pollMs;

  const receivers = await startHelper('serve-receivers.ts', { BENCH_RECEIVERS: String(FANOUT_RECEIVERS) });
  const urls = await receivers.call<string[]>('urls');
  const app = await startApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  const single = await organizationWithEndpoints(app, 'one@example.com', urls.slice(0, 1));
  const fanout = await organizationWithEndpoints(app, 'ten@example.com', urls);
  const worker = await app.call<{ concurrency: number; pollMs: number | 'default' }>('startWorker', workerOptions);

  console.log(
    `webhooks: contact.created events emitted in the service, delivered by its worker (concurrency ${worker.concurrency}, ` +
      `poll ${worker.pollMs}${worker.pollMs === 'default' ? '' : ' ms'}) to loopback receivers in another process; store: ${app.store}; ` +
      `baseline: raw undici POSTs of the same body, ${worker.concurrency} at a time (the worker's concurrency), from the bench process`,
  );

  // Thrown away: compiles the emit and delivery paths and opens the worker's connections, with
  // every measured shape (a burst to one receiver, a fan-out to ten, the steady rate), as the other
  // benches warm up with their own load. Traced with --trace-opt, V8 still moves the hot path's
  // functions from Maglev to TurboFan after ten thousand deliveries, and one warm-up of each burst
  // left 140 ms of TurboFan compiles in the measured burst (a seventh of its CPU): hence several
  // rounds. The steady rate comes last, at least as long as an idle connection lives:
  // under it the connections the bursts opened close on their idle timer, a path no burst takes,
  // which deoptimizes undici's and the streams' code (about 45 functions), and a measured burst
  // after it would pay for their recompiling. Rounds stop past the budget (at least one runs); the
  // answer is how many ran. `fanOut: false` leaves out the burst to ten receivers.
  const warmUp = async (rounds: number, options: { workers?: BenchServer[]; fanOut: boolean }): Promise<number> => {
    const { workers } = options;
    const started = performance.now();
    let done = 0;
    while (done < rounds && (done === 0 || performance.now() - started < WARM_UP_BUDGET_MS)) {
      done++;
      await deliver(app, receivers, 'warm-up', {
        organizationId: single,
        events: BURST_EVENTS,
        endpoints: 1,
        emitConcurrency: BURST_EMIT_CONCURRENCY,
        workers,
        warmUp: true,
      });
      if (!options.fanOut) continue;
      await deliver(app, receivers, 'warm-up, fan-out', {
        organizationId: fanout,
        events: FANOUT_EVENTS,
        endpoints: FANOUT_RECEIVERS,
        emitConcurrency: BURST_EMIT_CONCURRENCY,
        workers,
        warmUp: true,
      });
    }
    await deliver(app, receivers, 'warm-up, steady', {
      organizationId: single,
      events: STEADY_PER_SECOND * WARM_UP_STEADY_SECONDS,
      endpoints: 1,
      perSecond: STEADY_PER_SECOND,
      workers,
      warmUp: true,
    });
    return done;
  };
  const warmUpRounds = await warmUp(WARM_UP_ROUNDS, { fanOut: true });
  const warmUpDeliveries = warmUpRounds * 2 * BURST_EVENTS + STEADY_PER_SECOND * WARM_UP_STEADY_SECONDS;
  const sample = (await receivers.call<ReceiptSummary>('waitFor', { total: 0, timeoutMs: 0 })).sample;
  if (!sample) throw new Error('the warm-up delivered nothing to take a sample body from');
  console.log(
    `each delivery: a ${Buffer.byteLength(sample.body)}-byte envelope; bursts are emitted ${BURST_EMIT_CONCURRENCY} at a time; ` +
      `warm-up: ${warmUpRounds} round(s) of both bursts, then the steady rate for ${WARM_UP_STEADY_SECONDS} s; ` +
      `each baseline: ${warmUpDeliveries} POSTs thrown away first`,
  );

  const agent = new Agent();
  const rows: Scenario[] = [];
  let steady: Scenario | undefined;
  const bursts: Scenario[] = [];
  const burstBases: Scenario[] = [];
  const fans: Scenario[] = [];
  const fanBases: Scenario[] = [];
  try {
    // First, while the queue holds nothing but what this scenario adds.
    steady = await deliver(app, receivers, `steady, ${STEADY_PER_SECOND}/s for ${STEADY_SECONDS} s, 1 receiver`, {
      organizationId: single,
      events: STEADY_PER_SECOND * STEADY_SECONDS,
      endpoints: 1,
      perSecond: STEADY_PER_SECOND,
    });
    rows.push(steady);
    // Each burst beside its baseline, in turn, and the whole again (fewer rounds past the budget):
    // a burst lasts half a second and its baseline a tenth, so one pair measured the machine's
    // moment as much as the code (warm raw POSTs ran at 16,000–38,000 a second from one round to the
    // next).
    const measuringStarted = performance.now();
    for (let round = 1; round <= MEASURED_ROUNDS; round++) {
      if (round > 1 && performance.now() - measuringStarted > MEASURED_ROUNDS_BUDGET_MS) break;
      const of = `, round ${round}`;
      bursts.push(
        await deliver(app, receivers, `burst, ${BURST_EVENTS} events, 1 receiver${of}`, {
          organizationId: single,
          events: BURST_EVENTS,
          endpoints: 1,
          emitConcurrency: BURST_EMIT_CONCURRENCY,
        }),
      );
      burstBases.push(
        await baseline(agent, receivers, `  raw POSTs, 1 receiver${of}`, {
          urls: urls.slice(0, 1),
          total: BURST_EVENTS,
          concurrency: worker.concurrency,
          sample,
          warmUpPosts: round === 1 ? warmUpDeliveries : 0,
        }),
      );
      fans.push(
        await deliver(app, receivers, `burst, ${FANOUT_EVENTS} events x ${FANOUT_RECEIVERS} receivers${of}`, {
          organizationId: fanout,
          events: FANOUT_EVENTS,
          endpoints: FANOUT_RECEIVERS,
          emitConcurrency: BURST_EMIT_CONCURRENCY,
        }),
      );
      fanBases.push(
        await baseline(agent, receivers, `  raw POSTs, ${FANOUT_RECEIVERS} receivers${of}`, {
          urls,
          total: FANOUT_EVENTS * FANOUT_RECEIVERS,
          concurrency: worker.concurrency,
          sample,
          warmUpPosts: round === 1 ? warmUpDeliveries : 0,
        }),
      );
    }
  } finally {
    await agent.close();
  }
  const phases = await emitThenDeliver(app, receivers, single, workerOptions);
  for (let round = 0; round < bursts.length; round++) rows.push(bursts[round]!, burstBases[round]!, fans[round]!, fanBases[round]!);
  // Deliveries by more than one worker process: PostgreSQL is the store several processes share (on
  // SQLite every process would queue behind one writer). A second service process on the same schema
  // runs only its worker; the first emits and runs its own, so the two claim from one queue.
  let second: AppServer | undefined;
  let twoSteady: Scenario | undefined;
  let twoBurst: Scenario | undefined;
  if (app.store === 'postgres') {
    second = await startApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...app.storeEnv });
    try {
      await second.call('startWorker', workerOptions);
      const workers = [second];
      // The second process starts cold: warmed as the first was (a burst, then the steady rate for
      // longer than an idle connection lives; no fan-out, which it is not measured on), so the
      // two-worker figures measure sharing the queue, not a process compiling its delivery path and
      // opening its connections.
      await warmUp(1, { workers, fanOut: false });
      twoSteady = await deliver(app, receivers, `two workers: steady, ${STEADY_PER_SECOND}/s for ${STEADY_SECONDS} s, 1 receiver`, {
        organizationId: single,
        events: STEADY_PER_SECOND * STEADY_SECONDS,
        endpoints: 1,
        perSecond: STEADY_PER_SECOND,
        workers,
      });
      twoBurst = await deliver(app, receivers, `two workers: burst, ${BURST_EVENTS} events, 1 receiver`, {
        organizationId: single,
        events: BURST_EVENTS,
        endpoints: 1,
        emitConcurrency: BURST_EMIT_CONCURRENCY,
        workers,
      });
      rows.push(twoSteady, twoBurst);
      await second.call('stopWorker');
    } finally {
      // Before the first process, whose clean-up drops the schema the second serves from.
      await second.stop();
    }
  }
  const jobs = await app.call<JobCounts>('jobCounts');

  console.log('');
  const ms = (value: number) => (Number.isNaN(value) ? '' : value.toFixed(0));
  printTable(
    ['scenario', 'deliveries', 'deliveries/s', 'p50 ms', 'p99 ms', 'max ms', 'emitting s', 'sender CPU µs/delivery'],
    rows.map((row) => [
      row.name,
      String(row.deliveries),
      row.deliveriesPerSec.toFixed(0),
      ms(row.p50Ms),
      ms(row.p99Ms),
      ms(row.maxMs),
      row.emitMs === undefined ? '' : (row.emitMs / 1000).toFixed(1),
      row.cpuUsPerDelivery?.toFixed(0) ?? 'n/a',
    ]),
  );
  console.log('');
  console.log(
    "latency: from the event's created_at (set at emit) to its arrival at the receiver. sender CPU: the service process's " +
      "(emit, queue, deliver, record) or, for raw POSTs, the bench process's (undici alone), per delivery.",
  );
  console.log(`jobs by status at the end: ${JSON.stringify(jobs.jobs)}; delivery attempts: ${JSON.stringify(jobs.deliveries)}`);
  console.log('');
  if (!steady) throw new Error('the steady scenario did not run');
  const burst = medianOf(bursts);
  const burstBase = medianOf(burstBases);
  const fan = medianOf(fans);
  const fanBase = medianOf(fanBases);
  console.log(`figures below: the median of ${bursts.length} round(s) of each burst and of its baseline, taken apart`);
  printResult('webhooks', 'deliveries_per_s', burst.deliveriesPerSec, burstBase.deliveriesPerSec);
  printResult('webhooks', 'fanout_deliveries_per_s', fan.deliveriesPerSec, fanBase.deliveriesPerSec);
  // Per delivery, of the sending process: the service's, or the bench's own for the raw POSTs.
  printCpuResult('webhooks', burst.cpuUsPerDelivery, burstBase.cpuUsPerDelivery);
  printCpuResult('webhooks', fan.cpuUsPerDelivery, fanBase.cpuUsPerDelivery, 'fanout_server_cpu_us_per_req');
  // Where the burst's CPU goes, against the same raw POST: emitting and queueing (no POST in it), and
  // delivering (claim, sign, POST, record).
  console.log(
    `emitted with the worker stopped, then delivered from the full queue: ${phases.deliveriesPerSec.toFixed(0)} deliveries/s ` +
      `once the worker started; CPU below against a raw POST's`,
  );
  printCpuResult('webhooks', phases.emitUsPerEvent, burstBase.cpuUsPerDelivery, 'emit_cpu_us_per_event');
  printCpuResult('webhooks', phases.deliverUsPerDelivery, burstBase.cpuUsPerDelivery, 'deliver_cpu_us_per_delivery');
  console.log(`RESULT webhooks burst_p50_ms=${burst.p50Ms.toFixed(0)} burst_p99_ms=${burst.p99Ms.toFixed(0)} fanout_p99_ms=${fan.p99Ms.toFixed(0)}`);
  console.log(
    `RESULT webhooks steady_per_s=${STEADY_PER_SECOND} steady_p50_ms=${steady.p50Ms.toFixed(0)} steady_p99_ms=${steady.p99Ms.toFixed(0)} target_p99_ms=250`,
  );
  if (twoSteady && twoBurst) {
    // The target: 500 events a second with two worker processes, p99 from event to delivery under 250 ms.
    printResult('webhooks', 'two_workers_deliveries_per_s', twoBurst.deliveriesPerSec, burstBase.deliveriesPerSec);
    printCpuResult('webhooks', twoBurst.cpuUsPerDelivery, burstBase.cpuUsPerDelivery, 'two_workers_server_cpu_us_per_req');
    // How two worker processes scale against one, on the same store in the same run (issue 22's figure).
    printResult('webhooks', 'deliveries_per_s_pg_2workers', twoBurst.deliveriesPerSec, burst.deliveriesPerSec);
    console.log(
      `RESULT webhooks two_workers_steady_per_s=${twoSteady.deliveriesPerSec.toFixed(0)} two_workers_steady_p99_ms=${twoSteady.p99Ms.toFixed(0)} ` +
        `two_workers_burst_p99_ms=${twoBurst.p99Ms.toFixed(0)} target_per_s=${STEADY_PER_SECOND} target_p99_ms=250`,
    );
  }
});
