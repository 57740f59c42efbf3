/**
 * `inbound`: provider webhooks in, end to end. Distinct signed webhook envelopes (one customer
 * message each, from a handful of customers) are POSTed at `/provider/webhook` of the service, whose
 * own job worker runs beside its HTTP server in the one process (ROLE=all, as `npm start` runs it).
 * Two rates: accepted (signature checked, body stored, 200 answered; a webhook that needs only the
 * store, as these do, is applied in the same transaction, otherwise its job is queued) and fully
 * processed (from the first POST until every message is stored with its contact and conversation and
 * its `message.received` event emitted). Against a bare Fastify route that reads the raw body, checks the
 * same HMAC-SHA256 signature with the service's own function and answers the same bytes, under the
 * same load, in the same run.
 *
 * The baseline server is this very file, forked as a helper child with BENCH_INBOUND_ROLE=baseline:
 * what it serves is small enough not to deserve a script of its own.
 *
 * On embedded SQLite; with BENCH_DATABASE_URL set, on a fresh PostgreSQL schema instead.
 * BENCH_INBOUND_WEBHOOKS (default 2,500), BENCH_INBOUND_CONNECTIONS (50) and BENCH_INBOUND_CUSTOMERS
 * (20) change the size of the run.
 */
import { randomBytes } from 'node:crypto';
import type { InboundCounts, JobCounts, WaitForInboundArgs } from './app-commands.ts';
import {
  cpuUsPer,
  percentile,
  positiveIntegerFromEnv,
  mib,
  printCpuResult,
  printResult,
  printTable,
  reportToParent,
  requestJson,
  runBench,
  sampleCpu,
  startApp,
  startCpuClock,
  startHelper,
  type AppServer,
} from './lib.ts';
import { PROVIDER_WEBHOOK_PATH as PATH, postWebhooks, signedTextMessage, type BusinessNumber, type PostRun, type Signed } from './provider-webhooks.ts';

// What the service answers an accepted webhook with; the baseline sends the same bytes.
const RECEIVED_BODY = '{"received":true}';
const RECEIVED_TYPE = 'application/json; charset=utf-8';

// ---------------------------------------------------------------------------------------------
// The baseline child: bare Fastify, one POST route, the raw body, the signature check, 200.

async function serveBaseline(): Promise<void> {
  const secret = process.env.BENCH_INBOUND_APP_SECRET;
  if (!secret) throw new Error('BENCH_INBOUND_APP_SECRET is not set; the baseline is started by bench/inbound.ts');
  const { default: Fastify } = await import('fastify');
  const { verifyProviderSignature } = await import('../src/provider/whatsapp/webhook-signature.ts');
  const app = Fastify({ logger: false });
  // As the service does: the signature covers the exact bytes, so the body stays a Buffer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post(PATH, (request, reply) => {
    const signature = request.headers['x-hub-signature-256'];
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    if (!verifyProviderSignature(body, typeof signature === 'string' ? signature : undefined, secret)) {
      return reply.code(401).type(RECEIVED_TYPE).send('{"error":"signature_invalid"}');
    }
    return reply.code(200).type(RECEIVED_TYPE).send(RECEIVED_BODY);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('the baseline did not bind a TCP port');
  reportToParent(address.port, () => app.close());
}

// ---------------------------------------------------------------------------------------------
// The bench.

const WEBHOOKS = positiveIntegerFromEnv('BENCH_INBOUND_WEBHOOKS') ?? 2_500;
const CONNECTIONS = positiveIntegerFromEnv('BENCH_INBOUND_CONNECTIONS') ?? 50;
const CUSTOMERS = positiveIntegerFromEnv('BENCH_INBOUND_CUSTOMERS') ?? 20;
const WARMUP_WEBHOOKS = 400;
const BASELINE_PASSES = 3;
// Accepted with the worker stopped, then drained with no HTTP load: the two halves of the work apart.
const SPLIT_WEBHOOKS = Math.max(1, Math.round(WEBHOOKS / 2));
// Generous (a floor of about 100 processed a second): a stalled worker fails the bench instead of hanging it.
const PROCESS_TIMEOUT_MS = Math.max(45_000, WEBHOOKS * 10);
const PASSWORD = 'correct horse battery staple';

/** Message `index` of a batch, from customer `index` mod CUSTOMERS. */
function signedEnvelope(number: BusinessNumber, secret: string, index: number, batch: string, sentAt: number): Signed {
  const customer = index % CUSTOMERS;
  return signedTextMessage(number, secret, {
    waId: `4477009${String(customer).padStart(5, '0')}`,
    profileName: `Customer ${String(customer).padStart(3, '0')}`,
    // Unique by batch and index.
    idSuffix: `${batch}${String(index).padStart(7, '0')}`,
    sentAt,
    text: `Hello, this is message ${index} about my order, could someone get back to me today?`,
  });
}

const postAll = (url: string, envelopes: Signed[]): Promise<PostRun> => postWebhooks(url, envelopes, CONNECTIONS);

const perSecond = (count: number, fromMs: number, toMs: number) => count / ((toMs - fromMs) / 1000);

/** Counts what the service has stored; with `messages` > 0, once that many are (or at the time limit). */
function counts(app: AppServer, messages = 0, more: Pick<WaitForInboundArgs, 'receivedAtPositions' | 'receivedBy'> = {}): Promise<InboundCounts> {
  return app.call<InboundCounts>('waitForInbound', { messages, timeoutMs: messages === 0 ? 0 : PROCESS_TIMEOUT_MS, ...more } satisfies WaitForInboundArgs);
}

async function bench(): Promise<void> {
  const secret = randomBytes(32).toString('hex');
  const app = await startApp({ PROVIDER_APP_SECRET: secret });
  const signup = await requestJson<{ token: string }>(`${app.url}/auth/signup`, {
    body: { email: 'bench@example.com', password: PASSWORD, organization_name: 'Bench Ltd' },
    expectStatus: 201,
  });
  const connection = await requestJson<{ phone_number_id: string; waba_id: string; display_phone_number: string | null }>(`${app.url}/v1/connections`, {
    token: signup.token,
    body: { code: 'bench', name: 'Bench line' },
    expectStatus: 201,
  });
  const number: BusinessNumber = {
    phoneNumberId: connection.phone_number_id,
    wabaId: connection.waba_id,
    displayPhoneNumber: (connection.display_phone_number ?? '15550000000').replace(/\D/g, ''),
  };

  // Signed before any load, so that signing costs the load generator nothing during it.
  const now = Date.now();
  const sign = (count: number, batch: string) => Array.from({ length: count }, (_, i) => signedEnvelope(number, secret, i, batch, now));
  const warmup = sign(WARMUP_WEBHOOKS, 'W');
  const split = sign(SPLIT_WEBHOOKS, 'S');
  const measured = sign(WEBHOOKS, 'M');
  const bytes = measured.reduce((sum, envelope) => sum + Buffer.byteLength(envelope.body), 0) / measured.length;
  console.log(
    `inbound: ${WEBHOOKS} distinct signed webhooks (one text message each, from ${CUSTOMERS} customers, ${bytes.toFixed(0)} bytes on average) ` +
      `POSTed at ${PATH}, ${CONNECTIONS} at a time; store: ${app.store}; the service's own worker processes them in the same process ` +
      `(ROLE=all); baseline: bare Fastify checking the same signature, the same bodies ${BASELINE_PASSES} times over. Before that, apart: ${SPLIT_WEBHOOKS} accepted with the worker ` +
      'stopped (applied as they are accepted), then whatever is left drained by it with no HTTP load.',
  );

  // Baseline first, and stopped before the service is loaded.
  const baseline = await startHelper('inbound.ts', { BENCH_INBOUND_ROLE: 'baseline', BENCH_INBOUND_APP_SECRET: secret });
  await postAll(baseline.url, warmup);
  // The same bodies several times over (the baseline keeps nothing, so repeats cost it the same): at
  // its rate one pass lasts under a second, short enough for one hiccup of the machine to set its p99.
  const baselineWebhooks = Array.from({ length: BASELINE_PASSES }, () => measured).flat();
  const baseCpu = startCpuClock(baseline.pid);
  const base = await postAll(baseline.url, baselineWebhooks);
  const baseCpuUs = baseCpu.usPer(baselineWebhooks.length);
  await baseline.stop();

  // The two halves apart. The worker is not running yet (bench/serve-app.ts starts it on command),
  // so the warm-up and the split batch are only accepted and queued...
  const atStart = await counts(app);
  const warm = await postAll(app.url, warmup);
  if (warm.sample.body !== base.sample.body || warm.sample.contentType !== base.sample.contentType) {
    throw new Error(`the baseline answers ${base.sample.contentType} ${base.sample.body}, the service ${warm.sample.contentType} ${warm.sample.body}`);
  }
  const acceptCpu = startCpuClock(app.pid);
  const acceptOnly = await postAll(app.url, split);
  const acceptCpuUs = acceptCpu.usPer(SPLIT_WEBHOOKS);
  const afterAccept = await counts(app);
  // ...then the service's own worker (as src/main.ts starts it with ROLE=all) drains them all, the
  // warm-up's first (jobs are claimed by run_at): those are the processing path's warm-up, so the
  // drain's row runs from the warm-up's last message to the batch's last. Both times come from the
  // events' created_at, and the CPU at those times from /proc samples taken meanwhile: on SQLite a
  // count asked for during the drain waits behind the worker's transactions, so its answer comes late.
  const cpuSamples = sampleCpu(app.pid);
  await app.call('startWorker', {});
  // Counted from before the warm-up: a webhook that needs only the store is applied as it is
  // accepted, so by now the messages may be filed already and the drain finds nothing left.
  const warmupDone = atStart.messages + WARMUP_WEBHOOKS;
  const splitDone = warmupDone + SPLIT_WEBHOOKS;
  const drained = await counts(app, splitDone, { receivedAtPositions: [warmupDone, splitDone] });
  const cpuDuringDrain = cpuSamples.stop();
  if (drained.timedOut) {
    const jobs = await app.call<JobCounts>('jobCounts');
    throw new Error(
      `drain: ${drained.messages} messages stored within ${PROCESS_TIMEOUT_MS / 1000} s, expected ${splitDone}; ` +
        `${drained.providerWebhooksProcessed} of ${drained.providerWebhooks} provider webhooks processed; jobs: ${JSON.stringify(jobs.jobs)}`,
    );
  }
  const [drainFrom, drainTo] = drained.receivedAt as [number, number];
  const rssBefore = await app.rss();

  // The measure: HTTP and worker together.
  const cpuDuringRun = sampleCpu(app.pid);
  const real = await postAll(app.url, measured);
  const expected = drained.messages + WEBHOOKS;
  const done = await counts(app, expected, { receivedBy: [real.finishedAt] });
  const cpuAt = cpuDuringRun.stop();
  // Fully processed: every webhook answered 200 and every message stored with its event. The newest
  // message.received event's created_at is stamped in its processing transaction, a fraction of a
  // millisecond before it commits: more precise than the poll that noticed it.
  const processedAt = Math.max(real.finishedAt, done.lastMessageReceivedAt);
  const [cpuBefore, cpuAccepted, cpuDone] = [cpuAt(real.startedAt), cpuAt(real.finishedAt), cpuAt(processedAt)];
  const rss = await app.rss();
  const jobs = await app.call<JobCounts>('jobCounts');
  if (done.timedOut || done.messages !== expected || done.messageReceivedEvents !== expected) {
    throw new Error(
      `expected ${expected} messages and message.received events, found ${done.messages} and ${done.messageReceivedEvents}` +
        `${done.timedOut ? ` after ${PROCESS_TIMEOUT_MS / 1000} s` : ''}; jobs: ${JSON.stringify(jobs.jobs)}`,
    );
  }
  // Each batch numbers its messages from 0 and gives message i to customer i mod CUSTOMERS.
  const contacts = Math.min(CUSTOMERS, Math.max(WARMUP_WEBHOOKS, SPLIT_WEBHOOKS, WEBHOOKS));
  if (done.contacts !== contacts) throw new Error(`expected ${contacts} contacts, found ${done.contacts}`);

  const baseAccepted = perSecond(baselineWebhooks.length, base.startedAt, base.finishedAt);
  const accepted = perSecond(WEBHOOKS, real.startedAt, real.finishedAt);
  const processed = perSecond(WEBHOOKS, real.startedAt, processedAt);
  // By the time stamps, not by a count taken then: that count would wait behind the worker on SQLite.
  const processedDuringPosts = done.receivedByCounts[0]! - drained.messages;
  const acceptedCpuUs = cpuUsPer(WEBHOOKS, cpuBefore, cpuAccepted);
  const processedCpuUs = cpuUsPer(WEBHOOKS, cpuBefore, cpuDone);
  const us = (value: number | undefined) => value?.toFixed(0) ?? 'n/a';
  const ms = (value: number) => value.toFixed(1);
  const latencies = (run: PostRun) => [ms(percentile(run.latenciesMs, 0.5)), ms(percentile(run.latenciesMs, 0.99)), ms(run.latenciesMs.at(-1)!)];
  const seconds = (fromMs: number, toMs: number) => ((toMs - fromMs) / 1000).toFixed(2);

  console.log('');
  printTable(
    ['target', 'webhooks', 'seconds', 'per s', 'p50 ms', 'p99 ms', 'max ms', 'server CPU µs/webhook'],
    [
      ['service: accepted (200)', String(WEBHOOKS), seconds(real.startedAt, real.finishedAt), accepted.toFixed(0), ...latencies(real), us(acceptedCpuUs)],
      ['service: fully processed', String(WEBHOOKS), seconds(real.startedAt, processedAt), processed.toFixed(0), '', '', '', us(processedCpuUs)],
      [
        'baseline (bare Fastify, signature only)',
        String(baselineWebhooks.length),
        seconds(base.startedAt, base.finishedAt),
        baseAccepted.toFixed(0),
        ...latencies(base),
        us(baseCpuUs),
      ],
      [
        '  apart: accepted, worker stopped',
        String(SPLIT_WEBHOOKS),
        seconds(acceptOnly.startedAt, acceptOnly.finishedAt),
        perSecond(SPLIT_WEBHOOKS, acceptOnly.startedAt, acceptOnly.finishedAt).toFixed(0),
        ...latencies(acceptOnly),
        us(acceptCpuUs),
      ],
      afterAccept.messages >= splitDone
        ? ['  apart: drained by the worker, no HTTP', '0', '', '', '', '', '', 'nothing left: applied as accepted']
        : [
            '  apart: drained by the worker, no HTTP',
            String(SPLIT_WEBHOOKS),
            seconds(drainFrom, drainTo),
            perSecond(SPLIT_WEBHOOKS, drainFrom, drainTo).toFixed(0),
            '',
            '',
            '',
            us(cpuUsPer(SPLIT_WEBHOOKS, cpuDuringDrain(drainFrom), cpuDuringDrain(drainTo))),
          ],
    ],
  );
  console.log('');
  console.log(
    `when the last POST was answered, ${processedDuringPosts} of ${WEBHOOKS} messages were already stored ` +
      `(${((processedDuringPosts / WEBHOOKS) * 100).toFixed(0)} %); the rest took ${seconds(real.finishedAt, processedAt)} s more. ` +
      'Server CPU: the service process as a whole (HTTP and worker), from the first POST to the last answer, or to the last message ' +
      `stored. The drain's first ${WARMUP_WEBHOOKS} messages (the warm-up's) are not in its row.`,
  );
  console.log(
    `stored in the end: ${done.messages} messages, ${done.messageReceivedEvents} message.received events, ${done.contacts} contacts, ` +
      `${done.providerWebhooksProcessed} of ${done.providerWebhooks} provider webhooks processed; jobs by status: ${JSON.stringify(jobs.jobs)}`,
  );
  console.log(`server RSS after the run: ${mib(rss)} MiB (before it: ${mib(rssBefore)} MiB)`);
  console.log('');
  printResult('inbound', 'accepted_per_s', accepted, baseAccepted);
  printResult('inbound', 'processed_per_s', processed, baseAccepted);
  printResult('inbound', 'p99_ms', percentile(real.latenciesMs, 0.99), percentile(base.latenciesMs, 0.99), 2);
  // Per webhook: the service process (HTTP and worker) until the last answer, and until the last message stored.
  printCpuResult('inbound', acceptedCpuUs, baseCpuUs);
  printCpuResult('inbound', processedCpuUs, baseCpuUs, 'processed_server_cpu_us_per_req');
}

if (process.env.BENCH_INBOUND_ROLE === 'baseline') await serveBaseline();
else await runBench('inbound', bench);
