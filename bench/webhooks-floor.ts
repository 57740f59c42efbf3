/**
 * `webhooks-floor`: the least a durable webhook delivery costs on the embedded store, to read the
 * `webhooks` bench's figures against. The service's pipeline with nothing but its writes: an event
 * and its delivery job committed together (eight events a commit, as the `webhooks` bench's eight
 * concurrent emits share one), and a worker of 16 slots that claims due jobs, signs each envelope,
 * POSTs it, and records the attempt, the job's outcome and the usage count in one transaction that
 * also claims the next jobs (one per turn of the event loop, as the service's settle does).
 *
 * On the service's own schema (a file migrated by the service, foreign keys and all, the same
 * pragmas), with hand-written SQL in prepared statements and no query builder, no validation, no
 * lease re-check beyond the statements', no endpoint lookup (held in memory), no checkpoint thread
 * (SQLite's own checkpoints, on this thread) and no logging. It runs in this process; the receivers
 * are the `webhooks` bench's, in a process of their own, and the baseline is the same raw undici
 * POSTs of the same bytes at the same concurrency, from this process, warmed as long.
 *
 * What it answers: whether the `webhooks` target (deliveries at 0.4 of raw POSTs a second) is within
 * reach of any implementation that keeps the service's guarantees on this store, and how far above
 * this floor the service's emitting and delivering are.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Agent, Pool } from 'undici';
import { openStore, migrateToLatest } from '../src/db/connect.ts';
import { CONNECTION_PRAGMAS } from '../src/db/sqlite.ts';
import { API_VERSION } from '../src/events/event-types.schemas.ts';
import { signatureHeader } from '../src/events/webhook-signature.ts';
import { BoundedRead } from '../src/lib/bounded-read.ts';
import { DEFAULT_DELIVERY_READ } from '../src/modules/webhook-endpoints/webhook-sender.ts';
import { newId } from '../src/lib/ids.ts';
import { contactObject } from './app-commands.ts';
import { middleOf, printCpuResult, printResult, printTable, positiveIntegerFromEnv, runBench, startHelper, type BenchServer } from './lib.ts';
import { arrivals, rawPosts } from './webhook-load.ts';

const EVENTS = positiveIntegerFromEnv('BENCH_WEBHOOK_EVENTS') ?? 2_000;
// The service's worker: 16 slots, refilled once half are free.
const CONCURRENCY = 16;
const REFILL_BELOW = CONCURRENCY / 2;
const EMITS_PER_COMMIT = 8;
// Rounds of all three scenarios: the first ones warm the JIT and the connections and are thrown away
// (about as many deliveries as the `webhooks` bench's warm-up), the rest are measured (medians).
const WARM_UP_ROUNDS = Math.max(1, Math.round(12_000 / EVENTS));
const MEASURED_ROUNDS = 3;
const ARRIVAL_TIMEOUT_MS = Math.max(20_000, EVENTS * 5);
const JOB_NAME = 'webhook_delivery.deliver';
const USER_AGENT = 'MessagingService-Webhooks/1.0';

interface Round {
  /** Emitted beside the delivering, from the first emit to the last arrival. */
  burstPerSec: number;
  burstCpuUs: number;
  /** Emitted with the worker stopped, then delivered from the full queue. */
  emitCpuUs: number;
  deliverCpuUs: number;
  rawPerSec: number;
  rawCpuUs: number;
}

/** CPU time of this process, in microseconds. */
function cpuUs(): number {
  const used = process.cpuUsage();
  return used.user + used.system;
}

/** Waits for the next turn of the event loop, so that what a pipeline queued (answers, emits) runs. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A migrated store of its own, with an organization and one enabled endpoint at `url`. */
async function migratedStore(file: string, url: string): Promise<{ organizationId: string; endpointId: string }> {
  const store = openStore({ sqliteFile: file });
  try {
    await migrateToLatest(store);
    const now = new Date().toISOString();
    const organizationId = newId('organization');
    const endpointId = newId('webhookEndpoint');
    await store.db
      .insertInto('organizations')
      .values({ id: organizationId, name: 'Floor Ltd', metadata: '{}', require_approval_for_risky_actions: 0, created_at: now, updated_at: now })
      .execute();
    await store.db
      .insertInto('webhook_endpoints')
      .values({
        id: endpointId,
        organization_id: organizationId,
        connection_id: null,
        url,
        events: '["*"]',
        description: null,
        status: 'enabled',
        disabled_reason: null,
        secret: 'unused: the floor holds its secret in memory',
        previous_secret: null,
        previous_secret_expires_at: null,
        consecutive_failures: 0,
        first_failure_at: null,
        metadata: '{}',
        created_at: now,
        updated_at: now,
      })
      .execute();
    return { organizationId, endpointId };
  } finally {
    await store.close();
  }
}

/** The pipeline on `file`: emitting (`emit`), and a worker that delivers until a number of deliveries is recorded (`deliver`). */
function floorPipeline(file: string, target: { organizationId: string; endpointId: string; url: string }) {
  const db = new DatabaseSync(file);
  // The service's pragmas (src/db/sqlite.ts), less its checkpoint thread: SQLite checkpoints here.
  db.exec(CONNECTION_PRAGMAS);
  const insertEvent = db.prepare(
    'insert into events (id, organization_id, connection_id, type, data, previous_attributes, created_at) values (?, ?, null, ?, ?, null, ?)',
  );
  const insertJob = db.prepare(
    `insert into jobs (id, name, payload, status, run_at, attempts, max_attempts, locked_by, locked_until, last_error, dedupe_key, created_at, updated_at)
     values (?, '${JOB_NAME}', ?, 'queued', ?, 0, 8, null, null, null, null, ?, ?)`,
  );
  // The service's claim (src/jobs/worker.ts): expired leases first, then due jobs in order.
  const claim = db.prepare(
    `with due as (
       select id from (select id from jobs where status = 'running' and locked_until < ?1 and name = '${JOB_NAME}' limit ?2)
       union all
       select id from (select id from jobs where status = 'queued' and run_at <= ?1 and name = '${JOB_NAME}' order by run_at limit ?2)
       limit ?2)
     update jobs set status = 'running', locked_by = ?3, locked_until = ?4, attempts = attempts + 1, updated_at = ?1
     where id in (select id from due) returning id, payload, attempts`,
  );
  const settle = db.prepare(
    "update jobs set status = 'succeeded', last_error = null, locked_by = null, locked_until = null, updated_at = ? where id = ? and locked_by = ? and attempts = ?",
  );
  const insertAttempt = db.prepare(
    `insert into webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, attempt, replay_of, status, response_status,
       response_excerpt, error, duration_ms, next_retry_at, created_at, completed_at)
     values (?, ?, ?, ?, 'contact.created', ?, null, 'succeeded', ?, ?, null, ?, null, ?, ?)`,
  );
  const countDay = db.prepare(
    `insert into usage_counters (organization_id, day, meter, connection_id, automation_id, quantity) values (?, ?, 'webhook_deliveries', '', '', ?)
     on conflict (organization_id, day, meter, connection_id, automation_id) do update set quantity = usage_counters.quantity + excluded.quantity`,
  );
  const countPeriod = db.prepare(
    `insert into usage_periods (organization_id, period, meter, quantity) values (?, ?, 'webhook_deliveries', ?)
     on conflict (organization_id, period, meter) do update set quantity = usage_periods.quantity + excluded.quantity`,
  );
  const secret = `whsec_${newId('webhookEndpoint')}`;
  const pool = new Pool(new URL(target.url).origin);
  const urlPath = new URL(target.url).pathname;
  const workerId = `wrk_${randomBytes(6).toString('hex')}`;
  // Envelopes by event id, as the service keeps those it queued (envelope-cache.ts).
  const envelopes = new Map<string, string>();
  let emitted = 0;

  function emitCommit(count: number): void {
    db.exec('begin immediate');
    for (let i = 0; i < count; i++) {
      const now = new Date();
      const at = now.toISOString();
      const id = newId('event', now.getTime());
      const body = JSON.stringify({
        id,
        object: 'event',
        type: 'contact.created',
        api_version: API_VERSION,
        created_at: at,
        organization_id: target.organizationId,
        connection_id: null,
        data: { object: contactObject(emitted++, now) },
      });
      insertEvent.run(id, target.organizationId, 'contact.created', body, at);
      insertJob.run(newId('job', now.getTime()), JSON.stringify({ event_id: id, endpoint_id: target.endpointId }), at, at, at);
      envelopes.set(id, body);
    }
    db.exec('commit');
  }

  interface Attempt {
    jobId: string;
    attempt: number;
    eventId: string;
    status: number;
    excerpt: string;
    durationMs: number;
    startedAt: string;
  }

  async function send(job: { id: string; payload: string; attempts: number }): Promise<Attempt> {
    const { event_id: eventId } = JSON.parse(job.payload) as { event_id: string };
    const body = envelopes.get(eventId)!;
    const started = new Date();
    // The service's transport (dispatch with its reader), not pool.request: see src/lib/bounded-read.ts.
    const read = new BoundedRead(DEFAULT_DELIVERY_READ);
    pool.dispatch(
      {
        path: urlPath,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'service-signature': signatureHeader(body, [secret], Math.floor(started.getTime() / 1000)),
          'service-event-id': eventId,
          'service-event-type': 'contact.created',
        },
        body,
      },
      read,
    );
    const outcome = await read.outcome;
    if (outcome.kind === 'error') throw outcome.error;
    const excerpt = outcome.body.toString();
    envelopes.delete(eventId);
    return {
      jobId: job.id,
      attempt: job.attempts,
      eventId,
      status: outcome.status,
      excerpt,
      durationMs: Date.now() - started.getTime(),
      startedAt: started.toISOString(),
    };
  }

  return {
    /** `count` events, `EMITS_PER_COMMIT` a commit, a commit per turn of the event loop (beside a worker, if one runs). */
    async emit(count: number): Promise<void> {
      for (let done = 0; done < count; done += EMITS_PER_COMMIT) {
        emitCommit(Math.min(EMITS_PER_COMMIT, count - done));
        await nextTurn();
      }
    },

    /** Runs the worker until `total` deliveries are recorded. */
    deliver(total: number): Promise<void> {
      return new Promise((resolve, reject) => {
        let recorded = 0;
        let inFlight = 0;
        let finished: Attempt[] = [];
        let queued = false;
        const soon = () => {
          if (queued) return;
          queued = true;
          setImmediate(() => {
            queued = false;
            try {
              turn();
            } catch (error) {
              reject(error instanceof Error ? error : new Error(String(error)));
            }
          });
        };
        const start = (job: { id: string; payload: string; attempts: number }) => {
          inFlight++;
          send(job).then((attempt) => {
            inFlight--;
            finished.push(attempt);
            soon();
          }, reject);
        };
        // One transaction: the finished attempts recorded, their jobs settled, their usage counted,
        // and the free slots refilled.
        const turn = () => {
          const settling = finished;
          finished = [];
          const now = new Date();
          const at = now.toISOString();
          db.exec('begin immediate');
          for (const done of settling) {
            insertAttempt.run(
              newId('webhookDelivery', now.getTime()),
              target.organizationId,
              target.endpointId,
              done.eventId,
              done.attempt,
              done.status,
              done.excerpt,
              done.durationMs,
              done.startedAt,
              at,
            );
            settle.run(at, done.jobId, workerId, done.attempt);
          }
          if (settling.length > 0) {
            countDay.run(target.organizationId, at.slice(0, 10), settling.length);
            countPeriod.run(target.organizationId, at.slice(0, 7), settling.length);
          }
          const claimed =
            inFlight < REFILL_BELOW
              ? (claim.all(at, CONCURRENCY - inFlight, workerId, new Date(now.getTime() + 60_000).toISOString()) as {
                  id: string;
                  payload: string;
                  attempts: number;
                }[])
              : [];
          db.exec('commit');
          recorded += settling.length;
          for (const job of claimed) start(job);
          if (recorded >= total && inFlight === 0) resolve();
          // Nothing in flight and nothing claimed: the queue is empty for now (the emits are behind).
          else if (inFlight === 0) soon();
        };
        soon();
      });
    },

    async close(): Promise<void> {
      await pool.close();
      db.close();
    },
  };
}

async function round(pipeline: ReturnType<typeof floorPipeline>, receivers: BenchServer, agent: Agent, url: string, sampleBody: string): Promise<Round> {
  await receivers.call('reset');
  let cpu = cpuUs();
  const burstStarted = Date.now();
  await Promise.all([pipeline.emit(EVENTS), pipeline.deliver(EVENTS)]);
  const burstCpuUs = (cpuUs() - cpu) / EVENTS;
  const burst = await arrivals(receivers, 'floor, burst', EVENTS, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: true });

  await receivers.call('reset');
  cpu = cpuUs();
  await pipeline.emit(EVENTS);
  const emitCpuUs = (cpuUs() - cpu) / EVENTS;
  cpu = cpuUs();
  await pipeline.deliver(EVENTS);
  const deliverCpuUs = (cpuUs() - cpu) / EVENTS;
  await arrivals(receivers, 'floor, emitted then delivered', EVENTS, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: true });

  await receivers.call('reset');
  cpu = cpuUs();
  const rawMs = await rawPosts(agent, { urls: [url], total: EVENTS, concurrency: CONCURRENCY }, sampleBody, {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
  });
  const rawCpuUs = (cpuUs() - cpu) / EVENTS;
  await arrivals(receivers, 'raw POSTs', EVENTS, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: false });
  return {
    burstPerSec: EVENTS / ((burst.lastAt - burstStarted) / 1000),
    burstCpuUs,
    emitCpuUs,
    deliverCpuUs,
    rawPerSec: EVENTS / (rawMs / 1000),
    rawCpuUs,
  };
}

await runBench('webhooks-floor', async () => {
  const receivers = await startHelper('serve-receivers.ts', { BENCH_RECEIVERS: '1' });
  const [url] = await receivers.call<string[]>('urls');
  const directory = mkdtempSync(path.join(tmpdir(), 'webhooks-floor-'));
  const agent = new Agent();
  try {
    const file = path.join(directory, 'floor.sqlite');
    const ids = await migratedStore(file, url!);
    const pipeline = floorPipeline(file, { ...ids, url: url! });
    // One delivery, to have the bytes the receivers saw: what the raw POSTs send.
    await receivers.call('reset');
    await Promise.all([pipeline.emit(1), pipeline.deliver(1)]);
    const { sample } = await arrivals(receivers, 'floor, first delivery', 1, { timeoutMs: ARRIVAL_TIMEOUT_MS, distinct: true });
    for (let warmUp = 0; warmUp < WARM_UP_ROUNDS; warmUp++) await round(pipeline, receivers, agent, url!, sample!.body);
    const rounds: Round[] = [];
    for (let measured = 0; measured < MEASURED_ROUNDS; measured++) rounds.push(await round(pipeline, receivers, agent, url!, sample!.body));
    await pipeline.close();

    console.log(
      `webhooks-floor: ${EVENTS} contact.created events a scenario (a ${Buffer.byteLength(sample!.body)}-byte envelope), one receiver, ` +
        `${CONCURRENCY} slots; ${WARM_UP_ROUNDS} warm-up rounds, then ${MEASURED_ROUNDS} measured (medians below)`,
    );
    printTable(
      ['round', 'burst deliveries/s', 'burst CPU µs/delivery', 'emit CPU µs/event', 'deliver CPU µs/delivery', 'raw POSTs/s', 'raw CPU µs/POST'],
      rounds.map((each, index) => [
        String(index + 1),
        each.burstPerSec.toFixed(0),
        each.burstCpuUs.toFixed(1),
        each.emitCpuUs.toFixed(1),
        each.deliverCpuUs.toFixed(1),
        each.rawPerSec.toFixed(0),
        each.rawCpuUs.toFixed(1),
      ]),
    );
    const median = (pick: (each: Round) => number) => middleOf(rounds.map(pick).sort((a, b) => a - b));
    const raw = median((each) => each.rawCpuUs);
    printResult(
      'webhooks-floor',
      'deliveries_per_s',
      median((each) => each.burstPerSec),
      median((each) => each.rawPerSec),
    );
    printCpuResult(
      'webhooks-floor',
      median((each) => each.burstCpuUs),
      raw,
      'cpu_us_per_delivery',
    );
    printCpuResult(
      'webhooks-floor',
      median((each) => each.emitCpuUs),
      raw,
      'emit_cpu_us_per_event',
    );
    printCpuResult(
      'webhooks-floor',
      median((each) => each.deliverCpuUs),
      raw,
      'deliver_cpu_us_per_delivery',
    );
  } finally {
    await agent.close();
    rmSync(directory, { recursive: true, force: true });
  }
});
