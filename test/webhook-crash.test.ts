/**
 * Webhook delivery across a worker crash: separate worker processes (the real `src/main.ts` with
 * ROLE=worker) share the test store's queue, and one of them is killed with SIGKILL mid-run.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { before, describe, it } from 'node:test';
import { verifyWebhookSignature } from '../src/events/webhook-signature.ts';
import { webhookDelivery } from '../src/jobs/catalog.ts';
import { ManualClock } from '../src/lib/clock.ts';
import { createKey, signUp } from './factories.ts';
import { startServer, suiteScope, type Scope, type TestServer } from './harness.ts';
import { startReceiver, type Receiver } from './receiver.ts';
import { spawnService, storeEnv, type ServiceProcess } from './service-process.ts';
import { waitFor } from './wait.ts';

const EVENTS = 2_000;
const BATCH = 500;
// Short, so the dead worker's jobs come back within the test rather than after the default minute.
const LEASE_MS = 3_000;
// Enough deliveries to be sure the worker is in full swing when it dies, few enough that most remain.
const KILL_AFTER = 300;
// From the first worker's start to the queue's last job: typically 10 to 25 s; the slack is for a
// busy machine.
const RUN_DEADLINE_MS = 50_000;

describe('webhook delivery when a worker process crashes', () => {
  let server: TestServer;
  let receiver: Receiver;
  let endpoint: { id: string; secret: string };
  let apiKey: string;

  const suite = suiteScope();
  before(async () => {
    // The worker processes run on the real clock, so the jobs must be due by it: the harness's
    // default manual clock could lie in their future.
    server = await startServer(suite, { clock: new ManualClock(Date.now()) });
    const owner = await signUp(server);
    apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    receiver = await startReceiver(suite);
    const created = await server.request('POST', '/v1/webhook-endpoints', { token: apiKey, body: { url: receiver.url, events: ['contact.created'] } });
    assert.equal(created.status, 201, created.text);
    endpoint = created.body;
    const { db } = server.app.store;
    for (let start = 0; start < EVENTS; start += BATCH) {
      await db.transaction().execute(async (trx) => {
        for (let i = start; i < start + BATCH; i++) {
          await server.app.services.events.emit(trx, {
            type: 'contact.created',
            organizationId: owner.organizationId,
            connectionId: null,
            object: { id: `ct_${i}`, object: 'contact', name: `Contact ${i}` },
          });
        }
      });
    }
  });

  /** The real service as a worker on the test store: the same database and the same master key. */
  function startWorker(scope: Scope): ServiceProcess {
    return spawnService(
      scope,
      {
        ...storeEnv(server.testStore),
        ROLE: 'worker',
        // The sandbox is the test server's: a worker serves none of its own.
        PROVIDER_BASE_URL: `${server.url}/sandbox/graph`,
        LOG_LEVEL: 'warn',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WORKER_LEASE_MS: String(LEASE_MS),
      },
      server.testStore,
    );
  }

  // Kept up to date as requests arrive: parsing every body again on each poll would take the CPU
  // the workers need.
  const seen = new Set<string>();
  let parsed = 0;
  function receivedIds(): Set<string> {
    for (; parsed < receiver.received.length; parsed++) seen.add((JSON.parse(receiver.received[parsed]!.body) as { id: string }).id);
    return seen;
  }

  const deliveryJobs = (statuses: string[]) =>
    server.app.store.db.selectFrom('jobs').select(['id', 'attempts']).where('name', '=', webhookDelivery.name).where('status', 'in', statuses).execute();

  /** Waits for `done` until the run's deadline, and fails at once if the worker exits first. */
  async function until(what: string, worker: ServiceProcess, deadline: number, done: () => boolean | Promise<boolean>): Promise<void> {
    await waitFor(
      async () => {
        if (await done()) return true;
        if (worker.child.exitCode !== null) throw new Error(`the worker exited (${worker.child.exitCode}) before ${what}: ${worker.output()}`);
        return false;
      },
      // Not more often: every look reads the receiver's log or the queue, and the workers need the CPU.
      { timeoutMs: deadline - Date.now(), intervalMs: 50, message: () => `${what}; ${receivedIds().size} of ${EVENTS} events received. ${worker.output()}` },
    );
  }

  it('a worker killed with SIGKILL mid-run loses no event: another worker delivers every one', { timeout: RUN_DEADLINE_MS + 20_000 }, async (t) => {
    const emitted = await server.app.store.db.selectFrom('events').select('id').execute();
    assert.equal(emitted.length, EVENTS);
    const started = Date.now();
    const deadline = started + RUN_DEADLINE_MS;

    const first = startWorker(t);
    await until(`${KILL_AFTER} deliveries`, first, deadline, () => receiver.received.length >= KILL_AFTER);
    // Keep the answers back so that the kill is sure to find deliveries mid-request: without this,
    // it can land between one batch's settlement and the next claim, and strand nothing.
    receiver.hold();
    await until('deliveries waiting on the receiver', first, deadline, () => receiver.held() > 0);
    first.child.kill('SIGKILL');
    const [, signal] = (await once(first.child, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, 'SIGKILL');
    const killedAt = Date.now() - started;
    const beforeKill = receivedIds().size;
    assert.ok(beforeKill < EVENTS, `every event was delivered before the kill (${beforeKill}), so the crash proved nothing`);
    // Jobs the dead worker had claimed stay running under its lease: these are what must come back.
    const stranded = await deliveryJobs(['running']);
    assert.ok(stranded.length > 0, 'the kill left no job mid-flight, so the lease recovery went untested');

    // The dead worker's sockets are gone; the answers kept back go nowhere.
    receiver.release();
    const second = startWorker(t);
    await until(`all ${EVENTS} events`, second, deadline, () => receivedIds().size === EVENTS);
    // Every event has arrived, but an attempt may still be recording its outcome: stop only once the
    // queue holds nothing the worker could still owe.
    await until('the queue to empty', second, deadline, async () => (await deliveryJobs(['queued', 'running'])).length === 0);
    const doneAt = Date.now() - started;
    second.child.kill('SIGTERM');
    const [code] = (await once(second.child, 'exit')) as [number | null];
    assert.equal(code, 0, second.output());

    const received = receivedIds();
    const missing = emitted.filter((event) => !received.has(event.id));
    assert.deepEqual(missing, [], `${missing.length} events never reached the receiver`);
    for (const request of receiver.received) {
      // The signature's timestamp comes from the worker's real clock, not the test's manual one.
      const verified = verifyWebhookSignature(request.body, request.headers['service-signature'] as string | undefined, endpoint.secret, { now: request.at });
      assert.ok(verified.valid, `a delivery's signature did not verify: ${JSON.stringify(verified)}`);
    }
    assert.deepEqual(await deliveryJobs(['queued', 'running']), []);
    const succeeded = await deliveryJobs(['succeeded']);
    assert.equal(succeeded.length, EVENTS);
    // The dead worker's claims count as attempts, so each job it held was taken again after its lease.
    const attempts = new Map(succeeded.map((job) => [job.id, job.attempts]));
    for (const job of stranded) assert.ok(attempts.get(job.id)! >= 2, `job ${job.id} was never taken again`);

    // The history tells the truth about the crash: no attempt is left pending, each attempt a job
    // counted is there once, the last one succeeded, and the one the dead worker held failed with
    // worker_lost.
    const pending = await server.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?status=pending`, { token: apiKey });
    assert.equal(pending.status, 200, pending.text);
    assert.deepEqual(pending.body.data, [], 'attempts are still pending after the recovery');
    const history = await server.app.store.db
      .selectFrom('webhook_deliveries')
      .select(['event_id', 'attempt', 'status', 'error'])
      .where('endpoint_id', '=', endpoint.id)
      .orderBy('attempt')
      .execute();
    const attemptsOf = Map.groupBy(history, (row) => row.event_id);
    const jobs = await server.app.store.db.selectFrom('jobs').select(['id', 'payload', 'attempts']).where('name', '=', webhookDelivery.name).execute();
    const recordedFor = (job: { payload: string }) => attemptsOf.get((JSON.parse(job.payload) as { event_id: string }).event_id) ?? [];
    for (const job of jobs) {
      const recorded = recordedFor(job);
      assert.deepEqual(
        recorded.map((row) => row.attempt),
        Array.from({ length: job.attempts }, (_, i) => i + 1),
        `the attempts of job ${job.id}`,
      );
      assert.equal(recorded.at(-1)!.status, 'succeeded', `the last attempt of job ${job.id}`);
    }
    const jobById = new Map(jobs.map((job) => [job.id, job]));
    for (const { id, attempts } of stranded) {
      const lost = recordedFor(jobById.get(id)!)[attempts - 1]!;
      assert.deepEqual({ status: lost.status, error: lost.error }, { status: 'failed', error: 'worker_lost' }, `the lost attempt of job ${id}`);
    }
    t.diagnostic(
      `killed at ${killedAt} ms after ${beforeKill} events with ${stranded.length} jobs mid-flight; ` +
        `all delivered at ${doneAt} ms with ${receiver.received.length - EVENTS} duplicates`,
    );
  });
});
