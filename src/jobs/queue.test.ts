import assert from 'node:assert/strict';
import { afterEach, before, describe, it } from 'node:test';
import Type from 'typebox';
import { ManualClock, SECOND } from '../lib/clock.ts';
import { connectAgain, createTestStore, suiteScope, usingPostgres, type TestStore } from '../../test/harness.ts';
import { waitFor } from '../../test/wait.ts';
import { JobError, defineJob, retrySchedule } from './job.ts';
import { createQueue } from './queue.ts';
import { createWorker, type Worker } from './worker.ts';

const silent = { error: () => undefined, warn: () => undefined };
const Tick = defineJob({ name: 'test.tick', payload: Type.Object({ n: Type.Integer() }), retry: retrySchedule([5 * SECOND, 30 * SECOND], { jitter: 0 }), timeoutMs: 1000 });

describe(`the job queue (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let testStore: TestStore;
  let clock: ManualClock;
  let workers: Worker[] = [];
  const suite = suiteScope();
  before(async () => {
    testStore = await createTestStore(suite);
  });
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop(100)));
    workers = [];
    await testStore.store.db.deleteFrom('jobs').execute();
  });

  const setup = (options: { leaseMs?: number; concurrency?: number; store?: TestStore } = {}) => {
    clock ??= new ManualClock('2026-06-01T00:00:00Z');
    const store = (options.store ?? testStore).store;
    const queue = createQueue({ clock });
    const worker = createWorker({ db: store.db, dialect: store.dialect, clock, log: silent, pollMs: 10, ...options });
    workers.push(worker);
    return { queue, worker, db: store.db };
  };
  const statusOf = async (id: string) => (await testStore.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow());

  it('a job enqueued in a transaction that rolls back never exists', async () => {
    const { queue, worker, db } = setup();
    const seen: number[] = [];
    worker.register(Tick, async ({ n }) => void seen.push(n));
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await queue.enqueue(trx, Tick, { n: 1 });
        throw new Error('the change failed');
      }),
    );
    assert.equal(await worker.drain(), 0);
    assert.deepEqual(seen, []);
  });

  it('runs due jobs, and a job scheduled later only once its time comes', async () => {
    const { queue, worker, db } = setup();
    const seen: number[] = [];
    worker.register(Tick, async ({ n }) => void seen.push(n));
    await queue.enqueue(db, Tick, { n: 1 });
    const later = await queue.enqueue(db, Tick, { n: 2 }, { runAt: new Date(clock.now().getTime() + 60 * SECOND) });
    assert.equal(await worker.drain(), 1);
    assert.deepEqual(seen, [1]);
    clock.advance(60 * SECOND);
    assert.equal(await worker.drain(), 1);
    assert.deepEqual(seen, [1, 2]);
    assert.equal((await statusOf(later)).status, 'succeeded');
  });

  it('retries a retryable failure on its schedule, then gives up', async () => {
    const { queue, worker, db } = setup();
    let calls = 0;
    worker.register(Tick, async () => {
      calls++;
      throw new Error('receiver down');
    });
    const id = await queue.enqueue(db, Tick, { n: 1 });
    await worker.drain();
    let job = await statusOf(id);
    assert.equal(job.status, 'queued');
    assert.equal(job.run_at, new Date(clock.now().getTime() + 5 * SECOND).toISOString());
    clock.advance(5 * SECOND - 1);
    assert.equal(await worker.drain(), 0, 'not before its time');
    clock.advance(1);
    await worker.drain();
    clock.advance(30 * SECOND);
    await worker.drain();
    job = await statusOf(id);
    assert.equal(calls, 3);
    assert.equal(job.status, 'failed');
    assert.equal(job.last_error, 'receiver down');
  });

  it('does not retry a failure that says retrying cannot help', async () => {
    const { queue, worker, db } = setup();
    let calls = 0;
    worker.register(Tick, async () => {
      calls++;
      throw new JobError('gone for good', { retryable: false });
    });
    const id = await queue.enqueue(db, Tick, { n: 1 });
    await worker.drain();
    assert.equal(calls, 1);
    assert.equal((await statusOf(id)).status, 'failed');
  });

  it('an attempt that outlives its time-out is aborted and retried', async () => {
    const { queue, worker, db } = setup();
    let aborted = false;
    worker.register(Tick, (_payload, context) => new Promise<void>((resolve) => context.signal.addEventListener('abort', () => {
      aborted = true;
      resolve();
    })));
    const id = await queue.enqueue(db, Tick, { n: 1 });
    await worker.drain();
    assert.equal(aborted, true);
    const job = await statusOf(id);
    assert.equal(job.status, 'queued');
    assert.match(job.last_error ?? '', /timed out/);
  });

  it('a dedupe key makes a timer exist once, ever; replace moves a waiting one; cancel removes it', async () => {
    const { queue, worker, db } = setup();
    const seen: number[] = [];
    worker.register(Tick, async ({ n }) => void seen.push(n));
    const at = (s: number) => new Date(clock.now().getTime() + s * SECOND);
    await queue.enqueue(db, Tick, { n: 1 }, { dedupeKey: 'window:ct_1:1', runAt: at(10) });
    await queue.enqueue(db, Tick, { n: 2 }, { dedupeKey: 'window:ct_1:1', runAt: at(5) });
    await queue.enqueue(db, Tick, { n: 3 }, { dedupeKey: 'window:ct_1:1', runAt: at(20), replace: true });
    clock.advance(10 * SECOND);
    assert.equal(await worker.drain(), 0, 'moved to 20 s');
    clock.advance(10 * SECOND);
    await worker.drain();
    assert.deepEqual(seen, [3]);
    await queue.enqueue(db, Tick, { n: 4 }, { dedupeKey: 'window:ct_1:1', replace: true });
    assert.equal(await worker.drain(), 0, 'a timer that fired never fires again');
    await queue.enqueue(db, Tick, { n: 5 }, { dedupeKey: 'window:ct_2:1' });
    assert.equal(await queue.cancel(db, 'window:ct_2:1'), true);
    assert.equal(await worker.drain(), 0);
  });

  it("a dead worker's job comes back when its lease ends, and the dead worker's late outcome is ignored", async () => {
    const first = setup({ leaseMs: 30 * SECOND });
    let release!: () => void;
    first.worker.register(Tick, () => new Promise<void>((resolve) => (release = resolve)));
    const id = await first.queue.enqueue(first.db, Tick, { n: 1 });
    first.worker.start();
    await waitFor(async () => (await statusOf(id)).status === 'running', { message: 'the first worker to claim the job' });

    const second = setup({ leaseMs: 30 * SECOND });
    const seen: number[] = [];
    second.worker.register(Tick, async ({ n }) => void seen.push(n));
    assert.equal(await second.worker.drain(), 0, 'the lease still holds');
    clock.advance(30 * SECOND + 1);
    assert.equal(await second.worker.drain(), 1);
    assert.deepEqual(seen, [1]);
    assert.equal((await statusOf(id)).attempts, 2);

    release();
    // Stopping waits for the jobs in flight: the dead worker's late outcome has been tried when it returns.
    await first.worker.stop();
    const job = await statusOf(id);
    assert.equal(job.status, 'succeeded');
    assert.equal(job.locked_by, null);
  });

  it('stopping hands unfinished jobs back at once, their attempt uncounted', async () => {
    const { queue, worker, db } = setup();
    worker.register(Tick, (_payload, context) => new Promise<void>((_, reject) => context.signal.addEventListener('abort', () => reject(new Error('aborted')))));
    const id = await queue.enqueue(db, Tick, { n: 1 });
    worker.start();
    await waitFor(async () => (await statusOf(id)).status === 'running', { message: 'the worker to claim the job' });
    await worker.stop(20);
    const job = await statusOf(id);
    assert.equal(job.status, 'queued');
    assert.equal(job.attempts, 0);
    assert.equal(job.locked_by, null);
  });

  // PostgreSQL is the store for several processes; SQLite has one writer, so there the two workers
  // share the process's one connection, which is how two SQLite workers would ever run.
  it(`two workers ${usingPostgres ? 'with their own connections' : 'on one connection'} never run one job twice`, async (t) => {
    const other = usingPostgres ? connectAgain(t, testStore) : testStore;
    const runs = new Map<number, number>();
    const a = setup({ concurrency: 8 });
    const b = setup({ concurrency: 8, store: other });
    const handler = async ({ n }: { n: number }) => {
      runs.set(n, (runs.get(n) ?? 0) + 1);
      // Holds each job a moment, so that the two workers claim while the other's jobs are running.
      await new Promise((resolve) => setTimeout(resolve, 1));
    };
    a.worker.register(Tick, handler);
    b.worker.register(Tick, handler);
    await a.db.transaction().execute(async (trx) => {
      for (let n = 0; n < 200; n++) await a.queue.enqueue(trx, Tick, { n });
    });
    const [ranByA, ranByB] = await Promise.all([a.worker.drain(), b.worker.drain()]);
    assert.equal(ranByA + ranByB, 200);
    assert.equal(runs.size, 200);
    assert.ok([...runs.values()].every((count) => count === 1));
  });
});
