import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Type from 'typebox';
import { DAY, HOUR, MINUTE, ManualClock, SECOND } from '../lib/clock.ts';
import { connectAgain, usingPostgres, type TestStore } from '../../test/harness.ts';
import { queueBed } from '../../test/queue-bed.ts';
import { waitFor } from '../../test/wait.ts';
import { NO_RETRY, defineJob, defineRecurringJob } from './job.ts';
import { createQueue } from './queue.ts';
import { createScheduler, slotKey, slotOf } from './scheduler.ts';
import { createWorker } from './worker.ts';

const silent = { error: () => undefined, warn: () => undefined };
const Hourly = defineRecurringJob({ name: 'test.hourly', every: HOUR, retry: NO_RETRY, timeoutMs: 1000 });
const Tick = defineJob({ name: 'test.tick', payload: Type.Object({ n: Type.Integer() }), retry: NO_RETRY, timeoutMs: 1000 });

describe(`the scheduler (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let clock: ManualClock;
  const bed = queueBed();

  /** A worker process: its own scheduler, running the hourly job and ticks, recording which slots it ran. */
  const setup = (options: { store?: TestStore; ran?: string[] } = {}) => {
    clock ??= new ManualClock('2026-06-01T10:20:00Z');
    const store = (options.store ?? bed.testStore).store;
    const ran = options.ran ?? [];
    const worker = createWorker({ db: store.db, commitWithRequests: store.commitWithRequests, clock, log: silent, pollMs: 10, catalog: [Hourly, Tick] });
    worker.register(Hourly, async ({ slot }) => void ran.push(slot));
    worker.register(Tick, async () => undefined);
    bed.track(worker);
    return { worker, ran, db: store.db, queue: createQueue({ clock }) };
  };
  const hourlyJobs = () => bed.testStore.store.db.selectFrom('jobs').selectAll().where('name', '=', Hourly.name).orderBy('run_at').execute();

  it('a slot starts at a multiple of the period and has one key', () => {
    const slot = slotOf(Hourly, new Date('2026-06-01T10:59:59.999Z'));
    assert.equal(slot.toISOString(), '2026-06-01T10:00:00.000Z');
    assert.equal(slotKey(Hourly, slot), 'test.hourly@2026-06-01T10:00:00.000Z');
  });

  it("runs each slot's job once, due at the slot's start, and the next only when its slot begins", async () => {
    clock = new ManualClock('2026-06-01T10:20:00Z');
    const { worker, ran } = setup();
    assert.equal(await worker.drain(), 1);
    assert.deepEqual(ran, ['2026-06-01T10:00:00.000Z']);
    const [job] = await hourlyJobs();
    assert.equal(job!.dedupe_key, 'test.hourly@2026-06-01T10:00:00.000Z');
    assert.equal(job!.run_at, '2026-06-01T10:00:00.000Z');
    assert.equal(job!.status, 'succeeded');

    clock.advance(39 * MINUTE + 59 * SECOND);
    assert.equal(await worker.drain(), 0, 'still the 10:00 slot');
    clock.advance(SECOND);
    assert.equal(await worker.drain(), 1);
    assert.deepEqual(ran, ['2026-06-01T10:00:00.000Z', '2026-06-01T11:00:00.000Z']);
  });

  it('a process started later in a slot that already ran does not run it again', async () => {
    clock = new ManualClock('2026-06-01T10:20:00Z');
    const first = setup();
    await first.worker.drain();
    clock.advance(30 * MINUTE);
    const restarted = setup();
    assert.equal(await restarted.worker.drain(), 0);
    assert.deepEqual([...first.ran, ...restarted.ran], ['2026-06-01T10:00:00.000Z']);
    assert.equal((await hourlyJobs()).length, 1);
  });

  it('after downtime it runs once, for the current slot, not once per slot missed', async () => {
    clock = new ManualClock('2026-06-01T10:20:00Z');
    const before = setup();
    await before.worker.drain();
    await before.worker.stop(100);
    clock.advance(5 * HOUR + 10 * MINUTE);
    const after = setup();
    assert.equal(await after.worker.drain(), 1);
    assert.deepEqual(after.ran, ['2026-06-01T15:00:00.000Z']);
    assert.deepEqual(
      (await hourlyJobs()).map((job) => job.run_at),
      ['2026-06-01T10:00:00.000Z', '2026-06-01T15:00:00.000Z'],
    );
  });

  // Several processes on one PostgreSQL each tick their own scheduler; on SQLite, a process's workers
  // share its one connection.
  it(`workers and schedulers ticking at once ${usingPostgres ? 'on separate connections ' : ''}create one job per slot, and the other work still runs`, async (t) => {
    clock = new ManualClock('2026-06-01T10:20:00Z');
    const other = usingPostgres ? connectAgain(t, bed.testStore) : bed.testStore;
    try {
      const ran: string[] = [];
      const a = setup({ ran });
      const b = setup({ ran, store: other });
      const schedulers = Array.from({ length: 6 }, (_, i) => createScheduler({ db: (i % 2 === 0 ? bed.testStore : other).store.db, clock, jobs: [Hourly] }));
      for (let hour = 0; hour < 4; hour++) {
        await a.db.transaction().execute((trx) => a.queue.enqueue(trx, Tick, { n: hour }));
        const [ranByA, ranByB] = await Promise.all([a.worker.drain(), b.worker.drain(), ...schedulers.map((scheduler) => scheduler.tick())]);
        assert.equal(ranByA + ranByB, 2, `one slot job and one tick in hour ${hour}`);
        clock.advance(HOUR);
      }
      assert.deepEqual(ran, ['2026-06-01T10:00:00.000Z', '2026-06-01T11:00:00.000Z', '2026-06-01T12:00:00.000Z', '2026-06-01T13:00:00.000Z']);
      assert.equal((await hourlyJobs()).length, 4);
    } finally {
      await bed.stopWorkers();
    }
  });

  it('a started worker ticks on its own: each slot runs without anyone draining', async () => {
    clock = new ManualClock('2026-06-01T10:20:00Z');
    const { worker, ran } = setup();
    worker.start();
    await waitFor(() => ran.length >= 1, { message: 'the first slot to run' });
    clock.advance(HOUR);
    await waitFor(() => ran.length >= 2, { message: 'the next slot to run' });
    await worker.stop(100);
    assert.deepEqual(ran, ['2026-06-01T10:00:00.000Z', '2026-06-01T11:00:00.000Z']);
  });

  it('a period under a minute, or one the finished slot job would not outlive, is refused', () => {
    assert.throws(() => defineRecurringJob({ name: 'test.busy', every: SECOND, retry: NO_RETRY, timeoutMs: 1000 }), /at least a minute/);
    const weekly = defineRecurringJob({ name: 'test.weekly', every: 7 * DAY, retry: NO_RETRY, timeoutMs: 1000 });
    assert.throws(() => createScheduler({ db: bed.testStore.store.db, clock: new ManualClock(), jobs: [weekly] }), /test\.weekly recurs every/);
  });
});
