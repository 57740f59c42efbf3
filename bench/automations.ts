/**
 * `automations`: inbound messages that each start a run, end to end. Signed provider webhooks, one
 * text message each from a customer of its own, are POSTed at `/provider/webhook` of the service,
 * whose own job worker runs beside its HTTP server in the one process (ROLE=all, as `npm start` runs
 * it). An automation enabled on the number answers each message with a three-step run: a reply
 * (`send_message` with a `{{ message.text.body }}` hole), a wait for the customer's answer (a day),
 * and the end. Each step is one `run.step` job (src/modules/runs/run-engine.ts).
 *
 * Figures:
 * - runs/s: from the first POST until the sandbox provider (mounted in the same process) has accepted
 *   every run's reply; against the same number of webhooks processed with no automation enabled
 *   (message stored, its events emitted), measured first in the same run on the same service.
 * - the step latency: for each step, from its job's `run_at` (when the step became due) to the `at`
 *   of the step's `step.started` entry (its transaction holds the run), and to the job's outcome
 *   committed; against the `message.send` jobs of the same phase, a plain job of the same queue.
 * - each run's way from its webhook's POST to its reply's arrival at the sandbox.
 * - then every customer answers: replies/s until every run has ended, its wait's reply taken and
 *   its `end` step executed.
 * - the service process's CPU per run and per baseline message.
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead (the metrics
 * then end in `_pg`). BENCH_AUTOMATIONS_RUNS (default 600) and BENCH_AUTOMATIONS_CONNECTIONS (50)
 * change the size of the run.
 */
import { randomBytes } from 'node:crypto';
import type {
  InboundCounts,
  RunCounts,
  SandboxSends,
  StepTime,
  StepTimes,
  StepTimesArgs,
  WaitForInboundArgs,
  WaitForRunsArgs,
  WaitForSendsArgs,
} from './app-commands.ts';
import {
  cpuUsPer,
  mib,
  noteLoadStarting,
  percentile,
  positiveIntegerFromEnv,
  printCpuResult,
  printResult,
  printTable,
  requestJson,
  runBench,
  sampleCpu,
  startApp,
  type AppServer,
  choosePlan,
} from './lib.ts';
import { postWebhooks, PROVIDER_WEBHOOK_PATH, signedTextMessage, type BusinessNumber, type PostRun, type Signed } from './provider-webhooks.ts';

const RUNS = positiveIntegerFromEnv('BENCH_AUTOMATIONS_RUNS') ?? 600;
const CONNECTIONS = positiveIntegerFromEnv('BENCH_AUTOMATIONS_CONNECTIONS') ?? 50;
// Each phase's warm-up (JIT, caches, the automation's definition read once), thrown away.
const WARMUP = 200;
// Generous (a floor of about 40 runs a second): a stalled worker fails the bench instead of hanging it.
const TIMEOUT_MS = Math.max(30_000, RUNS * 25);
// The paced phase lasts about this long.
const PACED_SECONDS = 5;
const PASSWORD = 'correct horse battery staple';

/** The three steps: the reply echoes the customer's words, the wait takes their answer (or gives up after a day), then the end. */
const DEFINITION = {
  trigger: { type: 'message_received' },
  start: 'reply',
  steps: [
    { id: 'reply', type: 'send_message', text: 'Thanks for writing. You said: "{{ message.text.body }}". What is your order number?', next: 'ask' },
    { id: 'ask', type: 'wait_for_reply', timeout_seconds: 86_400, branches: { replied: 'done', timeout: 'done' } },
    { id: 'done', type: 'end' },
  ],
};

/** The batches, each from customers of its own (a digit in their numbers), so that every message of the measured ones starts a run. */
const BATCHES = { plainWarmup: 1, plain: 2, runsWarmup: 3, runs: 4, paced: 5 } as const;
const waIdOf = (batch: number, index: number) => `44771${batch}${String(index).padStart(6, '0')}`;

function signBatch(number: BusinessNumber, secret: string, batch: number, count: number, tag: string, text: (index: number) => string): Signed[] {
  const sentAt = Date.now();
  return Array.from({ length: count }, (_, index) =>
    signedTextMessage(number, secret, {
      waId: waIdOf(batch, index),
      profileName: `Customer ${batch}-${index}`,
      idSuffix: `${tag}${String(index).padStart(7, '0')}`,
      sentAt,
      text: text(index),
    }),
  );
}

const question = (index: number) => `Hello, this is customer ${index}: where is my order? It was due yesterday.`;
const answer = (index: number) => `It is order ${String(index).padStart(6, '0')}.`;

const perSecondOf = (count: number, fromMs: number, toMs: number) => count / ((toMs - fromMs) / 1000);
const sorted = (values: number[]) => values.sort((a, b) => a - b);

function inbound(app: AppServer, messages: number): Promise<InboundCounts> {
  return app.call<InboundCounts>('waitForInbound', { messages, timeoutMs: messages === 0 ? 0 : TIMEOUT_MS } satisfies WaitForInboundArgs);
}

async function sends(app: AppServer, phoneNumberId: string, count: number): Promise<SandboxSends> {
  const result = await app.call<SandboxSends>('waitForSends', { phoneNumberId, count, timeoutMs: TIMEOUT_MS } satisfies WaitForSendsArgs);
  if (result.timedOut) throw new Error(`the sandbox accepted ${result.sends.length} messages within ${TIMEOUT_MS / 1000} s, expected ${count}`);
  return result;
}

async function runs(app: AppServer, since: number, expected: { waiting: number } | { completed: number }): Promise<RunCounts> {
  const [status, count] = Object.entries(expected)[0] as [string, number];
  const args: WaitForRunsArgs = { since: new Date(since).toISOString(), status, count, timeoutMs: TIMEOUT_MS };
  const result = await app.call<RunCounts>('waitForRuns', args);
  if (result.timedOut || result.runs[status] !== count) {
    throw new Error(`expected ${count} runs ${status}, found ${JSON.stringify(result.runs)}; outbound messages: ${JSON.stringify(result.outbound)}`);
  }
  return result;
}

async function bench(): Promise<void> {
  const secret = randomBytes(32).toString('hex');
  const app = await startApp({ PROVIDER_APP_SECRET: secret });
  // The service's own worker, as src/main.ts runs it beside the HTTP server (ROLE=all).
  await app.call('startWorker', {});
  const suffix = app.store === 'postgres' ? '_pg' : '';
  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: PASSWORD, organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  await choosePlan(app.url, signup.token, 'scale');
  const connection = await requestJson<{ id: string; phone_number_id: string; waba_id: string; display_phone_number: string | null }>(
    `${app.url}/v1/connections`,
    { token: signup.token, body: { code: 'bench', name: 'Bench line' }, expectStatus: 201 },
  );
  const number: BusinessNumber = {
    phoneNumberId: connection.phone_number_id,
    wabaId: connection.waba_id,
    displayPhoneNumber: (connection.display_phone_number ?? '15550000000').replace(/\D/g, ''),
  };
  // The provider's upgraded throughput (1,000/s), read back by a sync: the pacer follows the number,
  // and at the default level it would set the rate of runs, not the engine.
  await requestJson(`${app.url}/sandbox/control/throughput`, { body: { phone_number_id: number.phoneNumberId, level: 'HIGH' } });
  await requestJson(`${app.url}/v1/connections/${connection.id}/sync`, { token: signup.token, body: {} });
  // The status walk (three signed webhooks in per reply) is the inbound bench's subject, as in the send bench.
  await requestJson(`${app.url}/sandbox/control/behaviour`, { body: { auto_status: false } });

  // Signed before any load, so that signing costs the load generator nothing during it.
  const plainWarmup = signBatch(number, secret, BATCHES.plainWarmup, WARMUP, 'W', question);
  const plain = signBatch(number, secret, BATCHES.plain, RUNS, 'B', question);
  const runsWarmup = signBatch(number, secret, BATCHES.runsWarmup, WARMUP, 'V', question);
  const measured = signBatch(number, secret, BATCHES.runs, RUNS, 'M', question);
  const replies = signBatch(number, secret, BATCHES.runs, RUNS, 'R', answer);
  const pacedMessages = signBatch(number, secret, BATCHES.paced, RUNS, 'P', question);
  const pacedReplies = signBatch(number, secret, BATCHES.paced, RUNS, 'Q', answer);
  // These customers wrote to the number as far as the provider knows, so their replies are inside the window.
  for (const batch of [BATCHES.runsWarmup, BATCHES.runs, BATCHES.paced]) {
    const count = batch === BATCHES.runsWarmup ? WARMUP : RUNS;
    await app.call('openSandboxWindows', { phoneNumberId: number.phoneNumberId, waIds: Array.from({ length: count }, (_, i) => waIdOf(batch, i)) });
  }
  console.log(
    `automations: ${RUNS} signed webhooks (one text message each, each from a customer of its own) POSTed at ${PROVIDER_WEBHOOK_PATH}, ` +
      `${CONNECTIONS} at a time; store: ${app.store}; the service's own worker in the same process (ROLE=all); the sandbox provider ` +
      'at the 1,000/s level, status walk off. Baseline: as many webhooks with no automation (message stored, events emitted). ' +
      `Measured: an automation on the number starts a run per message (reply, wait for the answer, end), until every reply is at the ` +
      `sandbox; then every customer answers, until every run has ended. ${WARMUP} webhooks of warm-up before each phase.`,
  );

  // Baseline: no automation exists yet.
  const atStart = await inbound(app, 0);
  await postWebhooks(app.url, plainWarmup, CONNECTIONS);
  await inbound(app, atStart.messages + WARMUP);
  const plainCpu = sampleCpu(app.pid);
  const plainRun = await postWebhooks(app.url, plain, CONNECTIONS);
  const plainDone = await inbound(app, atStart.messages + WARMUP + RUNS);
  const plainCpuAt = plainCpu.stop();
  if (plainDone.timedOut) throw new Error(`baseline: ${plainDone.messages} messages stored within ${TIMEOUT_MS / 1000} s`);
  const plainEnd = Math.max(plainRun.finishedAt, plainDone.lastMessageReceivedAt);
  const plainPerSecond = perSecondOf(RUNS, plainRun.startedAt, plainEnd);
  const plainCpuUs = cpuUsPer(RUNS, plainCpuAt(plainRun.startedAt), plainCpuAt(plainEnd));

  // The automation, through the API as a client would set it up.
  const automation = await requestJson<{ id: string }>(`${app.url}/v1/automations`, {
    token: signup.token,
    body: { name: 'Order questions', connection_id: connection.id, definition: DEFINITION },
    expectStatus: 201,
  });
  await requestJson(`${app.url}/v1/automations/${automation.id}/deploy`, { token: signup.token, body: { version: 1 } });
  await requestJson(`${app.url}/v1/automations/${automation.id}/enable`, { token: signup.token, body: {} });

  const warmupStarted = Date.now();
  await postWebhooks(app.url, runsWarmup, CONNECTIONS);
  await sends(app, number.phoneNumberId, WARMUP);
  await runs(app, warmupStarted, { waiting: WARMUP });
  const rssBefore = await app.rss();
  noteLoadStarting(app.pid);

  // Measured: the burst, as fast as the service takes the webhooks.
  const burst = await runPhase(app, number, BATCHES.runs, measured, replies, WARMUP);
  // Then at half the rate the burst reached, for the step latency of a service keeping up.
  const pacedRate = Math.max(5, burst.runsPerSecond / 2);
  const pacedCount = Math.min(RUNS, Math.round(pacedRate * PACED_SECONDS));
  const paced = await runPhase(app, number, BATCHES.paced, pacedMessages.slice(0, pacedCount), pacedReplies.slice(0, pacedCount), WARMUP + RUNS, pacedRate);
  const rss = await app.rss();

  const ms = (value: number) => value.toFixed(1);
  const spread = (values: number[]) => [String(values.length), ms(percentile(values, 0.5)), ms(percentile(values, 0.99)), ms(values.at(-1)!)];
  const seconds = (fromMs: number, toMs: number) => ((toMs - fromMs) / 1000).toFixed(2);
  const us = (value: number | undefined) => value?.toFixed(0) ?? 'n/a';
  const latencyRows = (name: string, phase: Phase) => [
    [`${name}: step due → step.started logged, all steps`, ...spread(logged(phase.steps))],
    ['  reply (send_message)', ...spread(logged(phase.stepsOf('reply')))],
    ['  ask (wait_for_reply, to waiting)', ...spread(logged(phase.stepsOf('ask')))],
    ['  done (end, after the answer)', ...spread(logged(phase.stepsOf('done')))],
    [`${name}: step due → run.step job settled`, ...spread(settled(phase.steps))],
    [`${name}: message.send due → job settled`, ...spread(phase.sendJobs)],
    [`${name}: webhook POST → reply at the provider`, ...spread(phase.endToEnd)],
    [`${name}: webhook POST answered`, ...spread(phase.messages.latenciesMs)],
  ];

  console.log('');
  printTable(
    ['phase', 'messages', 'seconds', 'per s', 'server CPU µs/message'],
    [
      ['baseline: processed, no automation', String(RUNS), seconds(plainRun.startedAt, plainEnd), plainPerSecond.toFixed(0), us(plainCpuUs)],
      [
        'burst: webhook to every reply at the provider',
        String(RUNS),
        seconds(burst.messages.startedAt, burst.lastReply),
        burst.runsPerSecond.toFixed(0),
        us(burst.runCpuUs),
      ],
      [
        'burst: answers, webhook to every run ended',
        String(RUNS),
        seconds(burst.answers.startedAt, burst.lastEnded),
        burst.answersPerSecond.toFixed(0),
        us(burst.answerCpuUs),
      ],
      [
        `paced at ${pacedRate.toFixed(0)}/s: to every reply`,
        String(pacedCount),
        seconds(paced.messages.startedAt, paced.lastReply),
        paced.runsPerSecond.toFixed(0),
        us(paced.runCpuUs),
      ],
      [
        `paced at ${pacedRate.toFixed(0)}/s: answers to every run ended`,
        String(pacedCount),
        seconds(paced.answers.startedAt, paced.lastEnded),
        paced.answersPerSecond.toFixed(0),
        us(paced.answerCpuUs),
      ],
    ],
  );
  console.log('');
  printTable(['latency, ms', 'count', 'p50', 'p99', 'max'], [...latencyRows('paced', paced), ...latencyRows('burst', burst)]);
  console.log('');
  console.log(
    `burst: when the last POST was answered, ${burst.repliesByLastPost} of ${RUNS} replies were at the provider; every run was waiting ` +
      `${seconds(burst.messages.startedAt, burst.lastWaiting)} s after the first POST. Runs and outbound messages by status at the end: ` +
      `${JSON.stringify(paced.counts.runs)}, ${JSON.stringify(paced.counts.outbound)} (the warm-up's ${WARMUP} runs still wait). Server CPU: the service ` +
      'process as a whole (HTTP, worker, the sandbox it mounts), from the first POST of a phase to its last reply at the provider or its last run ended.',
  );
  console.log(`server RSS after the run: ${mib(rss)} MiB (before it: ${mib(rssBefore)} MiB)`);
  console.log('');
  printResult('automations', `runs_per_s${suffix}`, burst.runsPerSecond, plainPerSecond);
  printResult('automations', `answers_completed_per_s${suffix}`, burst.answersPerSecond, plainPerSecond);
  // Paced: the step's tail against its median; whole step jobs against the plain send jobs of the same queue.
  printResult('automations', `step_latency_p99_ms${suffix}`, percentile(logged(paced.steps), 0.99), percentile(logged(paced.steps), 0.5), 2);
  printResult('automations', `step_job_p99_ms${suffix}`, percentile(settled(paced.steps), 0.99), percentile(paced.sendJobs, 0.99), 2);
  printResult('automations', `burst_step_latency_p99_ms${suffix}`, percentile(logged(burst.steps), 0.99), percentile(logged(burst.steps), 0.5), 2);
  // Per run until its reply is at the provider (the burst), against per message with no automation.
  printCpuResult('automations', burst.runCpuUs, plainCpuUs, `server_cpu_us_per_req${suffix}`);
}

const logged = (steps: StepTime[]) => sorted(steps.map((step) => step.loggedAt - step.dueAt));
const settled = (steps: StepTime[]) => sorted(steps.map((step) => step.settledAt - step.dueAt));

interface Phase {
  messages: PostRun;
  answers: PostRun;
  runsPerSecond: number;
  answersPerSecond: number;
  runCpuUs: number | undefined;
  answerCpuUs: number | undefined;
  /** Epoch milliseconds: the last reply at the provider, the last run waiting, the last run ended. */
  lastReply: number;
  lastWaiting: number;
  lastEnded: number;
  repliesByLastPost: number;
  /** Per run, sorted: from its webhook's POST to its reply's arrival at the sandbox. */
  endToEnd: number[];
  steps: StepTime[];
  stepsOf(stepId: string): StepTime[];
  sendJobs: number[];
  counts: RunCounts;
}

/**
 * One measured phase: the messages (each starts a run), until every reply is at the provider and
 * every run waits; then the customers' answers, until every run has ended. `sentBefore`: messages
 * the sandbox had accepted from the number before it. With `perSecond`, both are POSTed at that rate.
 */
async function runPhase(
  app: AppServer,
  number: BusinessNumber,
  batch: number,
  messages: Signed[],
  answers: Signed[],
  sentBefore: number,
  perSecond?: number,
): Promise<Phase> {
  const count = messages.length;
  const cpu = sampleCpu(app.pid);
  const messagesRun = await postWebhooks(app.url, messages, CONNECTIONS, perSecond);
  const arrived = await sends(app, number.phoneNumberId, sentBefore + count);
  await runs(app, messagesRun.startedAt, { waiting: count });
  const answersRun = await postWebhooks(app.url, answers, CONNECTIONS, perSecond);
  const counts = await runs(app, messagesRun.startedAt, { completed: count });
  const cpuAt = cpu.stop();
  const times = await app.call<StepTimes>('stepTimes', { since: new Date(messagesRun.startedAt).toISOString() } satisfies StepTimesArgs);

  // Each run's reply, by its customer.
  const arrivalOf = new Map(arrived.sends.map((send) => [send.waId, send.at]));
  const arrivals = messages.map((_, index) => {
    const at = arrivalOf.get(waIdOf(batch, index));
    if (at === undefined) throw new Error(`no reply reached customer ${index} of batch ${batch}`);
    return at;
  });
  const stepsOf = (stepId: string) => times.steps.filter((step) => step.stepId === stepId);
  for (const stepId of ['reply', 'ask', 'done']) {
    const executed = stepsOf(stepId).length;
    if (executed !== count) throw new Error(`expected ${count} executions of step ${stepId}, found ${executed} (${times.unpaired} runs unpaired)`);
  }
  const lastReply = Math.max(...arrivals);
  const lastEnded = Math.max(...stepsOf('done').map((step) => step.loggedAt));
  return {
    messages: messagesRun,
    answers: answersRun,
    runsPerSecond: perSecondOf(count, messagesRun.startedAt, lastReply),
    answersPerSecond: perSecondOf(count, answersRun.startedAt, lastEnded),
    runCpuUs: cpuUsPer(count, cpuAt(messagesRun.startedAt), cpuAt(lastReply)),
    answerCpuUs: cpuUsPer(count, cpuAt(answersRun.startedAt), cpuAt(lastEnded)),
    lastReply,
    lastWaiting: Math.max(...stepsOf('ask').map((step) => step.loggedAt)),
    lastEnded,
    repliesByLastPost: arrivals.filter((at) => at <= messagesRun.finishedAt).length,
    endToEnd: sorted(arrivals.map((at, index) => at - messagesRun.sentAt[index]!)),
    steps: times.steps,
    stepsOf,
    sendJobs: sorted(times.sends.map((send) => send.settledAt - send.dueAt)),
    counts,
  };
}

await runBench('automations', bench);
