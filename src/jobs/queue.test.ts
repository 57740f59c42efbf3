import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import Type from 'typebox';
import { HOUR, ManualClock, SECOND } from '../lib/clock.ts';
import { connectAgain, createTestStore, usingPostgres, type TestStore } from '../../test/harness.ts';
import { queueBed } from '../../test/queue-bed.ts';
import { waitFor } from '../../test/wait.ts';
import { JobError, defineJob, retrySchedule, type JobDefinition } from './job.ts';
import { createQueue } from './queue.ts';
import { createWorker, type SettleBatchWrite, type WorkerLog } from './worker.ts';

const silent = { error: () => undefined, warn: () => undefined };
const Tick = defineJob({
  name: 'test.tick',
  payload: Type.Object({ n: Type.Integer() }),
  retry: retrySchedule([5 * SECOND, 30 * SECOND], { jitter: 0 }),
  timeoutMs: 1000,
});
/** A job only a newer version of the service knows. */
const Newer = defineJob({
  name: 'test.newer',
  payload: Type.Object({ n: Type.Integer() }),
  retry: retrySchedule([5 * SECOND], { jitter: 0 }),
  timeoutMs: 1000,
});

describe(`the job queue (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let clock: ManualClock;
  const bed = queueBed();

  const setup = (
    options: {
      leaseMs?: number;
      concurrency?: number;
      pollMs?: number;
      sharedQueue?: boolean;
      store?: TestStore;
      catalog?: readonly JobDefinition[];
      log?: WorkerLog;
    } = {},
  ) => {
    clock ??= new ManualClock('2026-06-01T00:00:00Z');
    const store = (options.store ?? bed.testStore).store;
    const queue = createQueue({ clock });
    const worker = createWorker({ db: store.db, commitWithRequests: store.commitWithRequests, clock, log: silent, pollMs: 10, catalog: [Tick], ...options });
    bed.track(worker);
    return { queue, worker, db: store.db };
  };
  const statusOf = async (id: string) => await bed.testStore.store.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

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
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }));
    const later = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 2 }, { runAt: new Date(clock.now().getTime() + 60 * SECOND) }));
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
    const id = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }));
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
    const id = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }));
    await worker.drain();
    assert.equal(calls, 1);
    assert.equal((await statusOf(id)).status, 'failed');
  });

  it('an attempt that outlives its time-out is aborted and retried', async () => {
    const { queue, worker, db } = setup();
    let aborted = false;
    worker.register(
      Tick,
      (_payload, context) =>
        new Promise<void>((resolve) =>
          context.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          }),
        ),
    );
    const id = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }));
    await worker.drain();
    assert.equal(aborted, true);
    const job = await statusOf(id);
    assert.equal(job.status, 'queued');
    assert.match(job.last_error ?? '', /timed out/);
  });

  /** A queue on a store that counts its queries, and a Tick handler that notes each `n` it runs. */
  async function countingTicks(t: TestContext) {
    const counter = { queries: 0 };
    const counted = await createTestStore(t, { onQuery: () => counter.queries++ });
    const { queue, worker, db } = setup({ store: counted });
    const seen: number[] = [];
    worker.register(Tick, async ({ n }) => void seen.push(n));
    return { queue, worker, db, seen, counter };
  }

  it('enqueueAll queues a fan-out in one statement, each job its own, and refuses a payload that does not match', async (t) => {
    const { queue, worker, db, seen, counter } = await countingTicks(t);
    const ids = await db.transaction().execute(async (trx) => {
      counter.queries = 0;
      const queued = await queue.enqueueAll(trx, Tick, [{ n: 1 }, { n: 2 }, { n: 3 }]);
      assert.equal(counter.queries, 1);
      return queued;
    });
    assert.equal(new Set(ids).size, 3);
    assert.equal(await worker.drain(), 3);
    assert.deepEqual(seen.sort(), [1, 2, 3]);
    await assert.rejects(
      db.transaction().execute((trx) => queue.enqueueAll(trx, Tick, [{ n: 4 }, { n: 'five' } as unknown as { n: number }])),
      /does not match its schema/,
    );
    assert.equal(await worker.drain(), 0, 'nothing of the refused fan-out was queued');
  });

  it('enqueueMany inserts a large batch in statements of 100 rows, skipping a dedupe key already taken', async (t) => {
    const { queue, worker, db, seen, counter } = await countingTicks(t);
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: -1 }, { dedupeKey: 'lane:7' }));
    const jobs = Array.from({ length: 250 }, (_, n) => ({ payload: { n }, dedupeKey: `lane:${n}` }));
    await db.transaction().execute(async (trx) => {
      counter.queries = 0;
      const ids = await queue.enqueueMany(trx, Tick, jobs);
      assert.equal(counter.queries, 3);
      assert.equal(new Set(ids).size, 250);
    });
    assert.equal(await worker.drain(), 250);
    assert.deepEqual(
      seen.sort((a, b) => a - b),
      [-1, ...Array.from({ length: 250 }, (_, n) => n).filter((n) => n !== 7)],
      'the job that held lane:7 ran; the batch skipped its own',
    );
  });

  it('a dedupe key makes a timer exist once, ever; replace moves a waiting one; cancel removes it', async () => {
    const { queue, worker, db } = setup();
    const seen: number[] = [];
    worker.register(Tick, async ({ n }) => void seen.push(n));
    const at = (s: number) => new Date(clock.now().getTime() + s * SECOND);
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }, { dedupeKey: 'window:ct_1:1', runAt: at(10) }));
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 2 }, { dedupeKey: 'window:ct_1:1', runAt: at(5) }));
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 3 }, { dedupeKey: 'window:ct_1:1', runAt: at(20), replace: true }));
    clock.advance(10 * SECOND);
    assert.equal(await worker.drain(), 0, 'moved to 20 s');
    clock.advance(10 * SECOND);
    await worker.drain();
    assert.deepEqual(seen, [3]);
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 4 }, { dedupeKey: 'window:ct_1:1', replace: true }));
    assert.equal(await worker.drain(), 0, 'a timer that fired never fires again');
    await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 5 }, { dedupeKey: 'window:ct_2:1' }));
    assert.equal(await db.transaction().execute((trx) => queue.cancel(trx, 'window:ct_2:1')), true);
    assert.equal(await worker.drain(), 0);
  });

  it("a dead worker's job comes back when its lease ends, and the dead worker's late outcome is ignored", async () => {
    // One slot, taken by the job it holds: the first worker cannot claim the job again itself once
    // its lease ends, so the successor is the second worker, whatever the timing of its polls.
    const first = setup({ leaseMs: 30 * SECOND, concurrency: 1 });
    let release!: () => void;
    first.worker.register(Tick, () => new Promise<void>((resolve) => (release = resolve)));
    const id = await first.db.transaction().execute((trx) => first.queue.enqueue(trx, Tick, { n: 1 }));
    first.worker.start();
    await waitFor(async () => (await statusOf(id)).status === 'running', { message: 'the first worker to claim the job' });

    const second = setup({ leaseMs: 30 * SECOND });
    const seen: { n: number; previousAttemptLost: boolean }[] = [];
    second.worker.register(Tick, async ({ n }, context) => void seen.push({ n, previousAttemptLost: context.previousAttemptLost }));
    assert.equal(await second.worker.drain(), 0, 'the lease still holds');
    clock.advance(30 * SECOND + 1);
    assert.equal(await second.worker.drain(), 1);
    assert.deepEqual(seen, [{ n: 1, previousAttemptLost: true }], 'the successor is told the attempt before it was lost');
    assert.equal((await statusOf(id)).attempts, 2);

    release();
    // Stopping waits for the jobs in flight: the dead worker's late outcome has been tried when it returns.
    await first.worker.stop();
    const job = await statusOf(id);
    assert.equal(job.status, 'succeeded');
    assert.equal(job.locked_by, null);
  });

  it('stops at once when told to while it looks for jobs, not after its poll', async () => {
    const { worker } = setup({ pollMs: 3_600_000 });
    worker.register(Tick, async () => undefined);
    // Bounded, so that a stop that waits for the poll fails here rather than hangs the suite.
    const stopsSoon = (what: string) =>
      Promise.race([
        worker.stop(100),
        new Promise((_resolve, reject) => setTimeout(() => reject(new Error(`the worker did not stop ${what}`)), 5_000).unref()),
      ]);
    // The loop is now at its first await (the scheduler's tick), before its claim.
    worker.start();
    await stopsSoon('before its claim');
    worker.start();
    // And in the middle of a claim.
    await new Promise((resolve) => setImmediate(resolve));
    await stopsSoon('during its claim');
  });

  it('stopping hands unfinished jobs back at once, their attempt uncounted', async () => {
    const { queue, worker, db } = setup();
    worker.register(
      Tick,
      (_payload, context) => new Promise<void>((_, reject) => context.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    const id = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 1 }));
    worker.start();
    await waitFor(async () => (await statusOf(id)).status === 'running', { message: 'the worker to claim the job' });
    await worker.stop(20);
    const job = await statusOf(id);
    assert.equal(job.status, 'queued');
    assert.equal(job.attempts, 0);
    assert.equal(job.locked_by, null);
  });

  describe('settling in batches', () => {
    it("a handler's settle writes commit with its outcome; one whose write fails is retried alone, and the rest are recorded", async () => {
      const { queue, worker, db } = setup({ concurrency: 10 });
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      worker.register(Tick, async ({ n }, context) => {
        await gate;
        context.inSettle(async (trx) => {
          await queue.enqueue(trx, Newer, { n });
          if (n === 3) throw new Error('the record could not be written');
        });
      });
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 10 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      const drained = worker.drain();
      await waitFor(async () => (await statusOf(ids[9]!)).status === 'running', { message: 'the worker to claim every job' });
      open();
      assert.equal(await drained, 10);
      const followUps = await db.selectFrom('jobs').select('payload').where('name', '=', Newer.name).execute();
      assert.deepEqual(followUps.map((row) => (JSON.parse(row.payload) as { n: number }).n).sort(), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
      const failed = await statusOf(ids[3]!);
      assert.equal(failed.status, 'queued');
      assert.equal(failed.last_error, 'the record could not be written');
      assert.equal(failed.run_at, new Date(clock.now().getTime() + 5 * SECOND).toISOString());
      for (const id of ids.filter((_, n) => n !== 3)) assert.equal((await statusOf(id)).status, 'succeeded');
    });

    it('a batch write runs once per settle transaction with the items of all its attempts; one that fails is retried job by job', async () => {
      const { queue, worker, db } = setup({ concurrency: 10 });
      const runs: number[][] = [];
      const followUps: SettleBatchWrite<number> = {
        async run(trx, items) {
          runs.push([...items]);
          if (items.includes(3)) throw new Error('the record could not be written');
          for (const n of items) await queue.enqueue(trx, Newer, { n });
        },
      };
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      worker.register(Tick, async ({ n }, context) => {
        await gate;
        context.inSettleBatch(followUps, n);
      });
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 10 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      const drained = worker.drain();
      await waitFor(async () => (await statusOf(ids[9]!)).status === 'running', { message: 'the worker to claim every job' });
      open();
      assert.equal(await drained, 10);
      assert.ok(
        runs.some((items) => items.length > 1),
        `attempts settled together share one run: ${JSON.stringify(runs)}`,
      );
      assert.ok(
        runs.some((items) => items.length === 1 && items[0] === 3),
        'the failing item is retried alone',
      );
      const written = await db.selectFrom('jobs').select('payload').where('name', '=', Newer.name).execute();
      assert.deepEqual(written.map((row) => (JSON.parse(row.payload) as { n: number }).n).sort(), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
      const failed = await statusOf(ids[3]!);
      assert.equal(failed.status, 'queued');
      assert.equal(failed.last_error, 'the record could not be written');
      for (const id of ids.filter((_, n) => n !== 3)) assert.equal((await statusOf(id)).status, 'succeeded');
    });

    it('a claim commits with the requests on SQLite (a begin, the claim, a commit) and is one statement on PostgreSQL', async (t) => {
      let queries = 0;
      const counted = await createTestStore(t, { onQuery: () => queries++ });
      const { worker } = setup({ store: counted });
      worker.register(Tick, async () => undefined);
      queries = 0;
      assert.equal(await worker.drain(), 0);
      assert.equal(queries, usingPostgres ? 1 : 3);
    });

    it('attempts that finish together are settled in far fewer statements than jobs', async (t) => {
      let queries = 0;
      const counted = await createTestStore(t, { onQuery: () => queries++ });
      const { queue, worker, db } = setup({ concurrency: 20, store: counted });
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      worker.register(Tick, () => gate);
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 20 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      queries = 0;
      const drained = worker.drain();
      await waitFor(
        async () => (await counted.store.db.selectFrom('jobs').select('status').where('id', '=', ids[19]!).executeTakeFirstOrThrow()).status === 'running',
        {
          message: 'the worker to claim every job',
        },
      );
      const claimQueries = queries;
      open();
      assert.equal(await drained, 20);
      // After the claim (and this test's status reads): the settle transactions, each a begin, one
      // update and a commit (the first job to finish is settled at once, the others gather behind
      // it), then the drain's last, empty claim: on SQLite a begin, the claim and a commit (it joins
      // the commit groups), on PostgreSQL the claim alone. One settle per job would be 20 statements
      // or more.
      const settleQueries = queries - claimQueries - (usingPostgres ? 1 : 3);
      assert.ok(settleQueries <= 9, `${settleQueries} statements settled 20 jobs`);
      const jobs = await counted.store.db.selectFrom('jobs').select(['status', 'attempts']).execute();
      assert.ok(jobs.every((job) => job.status === 'succeeded' && job.attempts === 1));
    });
  });

  describe('when a freed slot claims (the poll set to an hour, so that it never fires here)', () => {
    const HOUR_POLL = 3_600_000;
    // The claim is the one statement that starts with its CTE (worker.ts, claimDue).
    const isClaim = (sql: string) => sql.startsWith('with "due"');
    const gated = () => {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      return { gate, open };
    };
    const statuses = async (db: TestStore['store']['db'], ids: string[]) =>
      (await db.selectFrom('jobs').select('status').where('id', 'in', ids).execute()).map((row) => row.status);

    it('a backlog drains through freed slots alone, claim after claim', async () => {
      const { queue, worker, db } = setup({ concurrency: 2, pollMs: HOUR_POLL });
      const seen: number[] = [];
      worker.register(Tick, async ({ n }) => void seen.push(n));
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 7 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      worker.start();
      await waitFor(async () => (await statuses(db, ids)).every((status) => status === 'succeeded'), { message: 'all seven jobs to succeed' });
      assert.deepEqual(seen.sort(), [0, 1, 2, 3, 4, 5, 6]);
    });

    it('once a claim finds the queue drained, the jobs that finish claim nothing', async (t) => {
      let claims = 0;
      const counted = await createTestStore(t, { onQuery: (sql) => void (isClaim(sql) && claims++) });
      const { queue, worker, db } = setup({ concurrency: 8, pollMs: HOUR_POLL, store: counted });
      const { gate, open } = gated();
      worker.register(Tick, () => gate);
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 4 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      worker.start();
      await waitFor(async () => (await statuses(db, ids)).every((status) => status === 'running'), { message: 'the worker to claim the four jobs' });
      assert.equal(claims, 1, 'one claim took all four (it asked for eight)');
      open();
      await waitFor(async () => (await statuses(db, ids)).every((status) => status === 'succeeded'), { message: 'the four jobs to succeed' });
      assert.equal(claims, 1, 'the four freed slots made no claim');
    });

    it('a settle that frees slots while jobs wait claims them itself: on SQLite in its own commit', async (t) => {
      const statements: string[] = [];
      const counted = await createTestStore(t, { onQuery: (sql) => void statements.push(sql) });
      const { queue, worker, db } = setup({ concurrency: 2, pollMs: HOUR_POLL, store: counted });
      const { gate, open } = gated();
      worker.register(Tick, () => gate);
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 4 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      worker.start();
      await waitFor(async () => (await statuses(db, ids)).filter((status) => status === 'running').length === 2, { message: 'the worker to claim two' });
      statements.length = 0;
      open();
      await waitFor(async () => (await statuses(db, ids)).every((status) => status === 'succeeded'), { message: 'the four jobs to succeed' });
      // The two that ran finish together and settle in one transaction, which claims the other two.
      const settled = statements.findIndex((sql) => /^update "jobs" set "status" = (\?|\$1)/.test(sql));
      const claimed = statements.findIndex(isClaim);
      assert.ok(settled >= 0 && claimed > settled, statements.join('\n'));
      const between = statements.slice(settled, claimed);
      if (!usingPostgres) assert.ok(!between.includes('commit'), `the settle and the claim share one commit:\n${between.join('\n')}`);
      await worker.stop();
    });

    it("a claim beside a settle that fails leaves the settle's outcomes recorded; the jobs it took come back with their lease", async (t) => {
      let failClaims = false;
      const counted = await createTestStore(t, {
        onQuery: (sql) => {
          // Thrown after the statement ran, as an answer lost on its way back would be.
          if (failClaims && isClaim(sql)) throw new Error('the claim’s answer was lost');
        },
      });
      const errors: string[] = [];
      const log = { error: (_: object, message: string) => void errors.push(message), warn: () => undefined };
      const { queue, worker, db } = setup({ concurrency: 2, store: counted, log, leaseMs: 60_000 });
      const { gate, open } = gated();
      worker.register(Tick, () => gate);
      const ids = await db.transaction().execute(async (trx) => Promise.all(Array.from({ length: 4 }, (_, n) => queue.enqueue(trx, Tick, { n }))));
      worker.start();
      await waitFor(async () => (await statuses(db, ids)).filter((status) => status === 'running').length === 2, { message: 'the worker to claim two' });
      const first = (await counted.store.db.selectFrom('jobs').select('id').where('status', '=', 'running').execute()).map((row) => row.id);
      failClaims = true;
      open();
      await waitFor(async () => (await statuses(db, first)).every((status) => status === 'succeeded'), { message: 'the first two to be settled' });
      // Waited for, not asserted at once: on PostgreSQL the claim follows the settle's commit, so the
      // two may be seen settled before it has run.
      const besideFailed = 'claiming jobs beside a settle failed; the loop claims instead';
      await waitFor(() => errors.includes(besideFailed), { message: () => `the claim beside the settle to fail; logged: ${errors.join('; ') || 'nothing'}` });
      failClaims = false;
      // The failed claim's jobs are the worker's until their lease ends, as any claim whose answer was lost.
      clock.advance(61_000);
      await waitFor(async () => (await statuses(db, ids)).every((status) => status === 'succeeded'), { message: 'all four jobs to succeed' });
      await worker.stop();
    });

    /**
     * Three gated jobs take three of four slots (a short claim, so no backlog is known); a fourth is
     * enqueued, and `announced` wakes the worker as the service's queue does after the enqueue
     * commits (three running jobs keep it from claiming then). When the gate opens, the fourth must
     * run without the poll.
     */
    const fourthRunsWhenASlotFrees = async (options: { sharedQueue: boolean; announced: boolean }) => {
      const { queue, worker, db } = setup({ concurrency: 4, pollMs: HOUR_POLL, sharedQueue: options.sharedQueue });
      const { gate, open } = gated();
      const seen: number[] = [];
      worker.register(Tick, async ({ n }) => {
        if (n < 3) await gate;
        seen.push(n);
      });
      const first = await db.transaction().execute(async (trx) => Promise.all([0, 1, 2].map((n) => queue.enqueue(trx, Tick, { n }))));
      worker.start();
      await waitFor(async () => (await statuses(db, first)).every((status) => status === 'running'), { message: 'the worker to claim the first three' });
      const fourth = await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 3 }));
      if (options.announced) worker.wake();
      open();
      await waitFor(async () => (await statusOf(fourth)).status === 'succeeded', { message: 'the fourth job to run without the poll' });
      assert.deepEqual(seen.sort(), [0, 1, 2, 3]);
    };

    it('a job enqueued while the slots are busy is claimed as soon as one frees', () => fourthRunsWhenASlotFrees({ sharedQueue: false, announced: true }));

    it('in a queue other processes share, a freed slot claims what they enqueued, unannounced', () =>
      fourthRunsWhenASlotFrees({ sharedQueue: true, announced: false }));
  });

  // PostgreSQL is the store for several processes; SQLite has one writer, so there the two workers
  // share the process's one connection, which is how two SQLite workers would ever run.
  it(`two workers ${usingPostgres ? 'with their own connections' : 'on one connection'} never run one job twice`, async (t) => {
    const other = usingPostgres ? connectAgain(t, bed.testStore) : bed.testStore;
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

  describe('the catalogue at start-up', () => {
    it('a catalogued job without a handler stops the worker from starting, and is named', () => {
      const { worker } = setup({ catalog: [Tick, Newer] });
      worker.register(Tick, async () => undefined);
      assert.throws(() => worker.assertComplete(), { message: 'no handler registered for job test.newer' });
      assert.throws(() => worker.start(), /test\.newer/);
      worker.register(Newer, async () => undefined);
      worker.assertComplete();
    });

    it('every missing handler is named at once', () => {
      const { worker } = setup({ catalog: [Tick, Newer] });
      assert.throws(() => worker.assertComplete(), { message: 'no handler registered for jobs test.tick, test.newer' });
    });

    it('a job that is not in the catalogue cannot be registered', () => {
      const { worker } = setup({ catalog: [Tick] });
      assert.throws(() => worker.register(Newer, async () => undefined), /test\.newer is not in the catalogue/);
    });
  });

  describe('a job this worker does not know (a rolling deploy)', () => {
    it('is never claimed: it stays queued, its attempts, time and error unchanged', async () => {
      const warnings: string[] = [];
      const { queue, worker, db } = setup({
        catalog: [Tick],
        log: { error: () => undefined, warn: (_object: object, message: string) => void warnings.push(message) },
      });
      const seen: number[] = [];
      worker.register(Tick, async ({ n }) => void seen.push(n));
      const unknown = await db.transaction().execute((trx) => queue.enqueue(trx, Newer, { n: 1 }));
      const before = await statusOf(unknown);
      await db.transaction().execute((trx) => queue.enqueue(trx, Tick, { n: 2 }));
      assert.equal(await worker.drain(), 1, 'the job it knows still runs');
      assert.deepEqual(seen, [2]);
      clock.advance(HOUR);
      assert.equal(await worker.drain(), 0);
      const after = await statusOf(unknown);
      assert.equal(after.status, 'queued');
      assert.equal(after.attempts, 0);
      assert.equal(after.run_at, before.run_at);
      assert.equal(after.locked_by, null);
      assert.equal(after.last_error, null);
      assert.deepEqual(warnings, []);
    });

    it(`two workers ${usingPostgres ? 'with their own connections' : 'on one connection'}: the one that knows a job runs it, the other never touches it`, async (t) => {
      const other = usingPostgres ? connectAgain(t, bed.testStore) : bed.testStore;
      try {
        const older = setup({ catalog: [Tick] });
        const newer = setup({ catalog: [Tick, Newer], store: other });
        const ranBy = { older: [] as string[], newer: [] as string[] };
        older.worker.register(Tick, async ({ n }) => void ranBy.older.push(`tick ${n}`));
        newer.worker.register(Tick, async ({ n }) => void ranBy.newer.push(`tick ${n}`));
        newer.worker.register(Newer, async ({ n }) => void ranBy.newer.push(`newer ${n}`));
        await older.db.transaction().execute(async (trx) => {
          for (let n = 0; n < 40; n++) await older.queue.enqueue(trx, n % 2 === 0 ? Tick : Newer, { n });
        });

        // The old worker alone first: it runs what it knows and leaves the rest as it was.
        assert.equal(await older.worker.drain(), 20);
        const waiting = await bed.testStore.store.db.selectFrom('jobs').selectAll().where('name', '=', Newer.name).execute();
        assert.equal(waiting.length, 20);
        assert.ok(waiting.every((job) => job.status === 'queued' && job.attempts === 0));

        await older.db.transaction().execute(async (trx) => {
          for (let n = 40; n < 80; n++) await older.queue.enqueue(trx, n % 2 === 0 ? Tick : Newer, { n });
        });
        await Promise.all([older.worker.drain(), newer.worker.drain()]);
        assert.ok(
          ranBy.older.every((run) => run.startsWith('tick')),
          'the old worker ran only jobs it knows',
        );
        assert.equal(ranBy.newer.filter((run) => run.startsWith('newer')).length, 40);
        assert.equal(ranBy.older.length + ranBy.newer.length, 80, 'each job ran once');
        const jobs = await bed.testStore.store.db.selectFrom('jobs').select(['status', 'attempts']).execute();
        assert.ok(
          jobs.every((job) => job.status === 'succeeded' && job.attempts === 1),
          'none failed, none counted twice',
        );
      } finally {
        await bed.stopWorkers();
      }
    });
  });
});
