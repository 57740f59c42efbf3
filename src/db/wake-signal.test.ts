import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import Type from 'typebox';
import { sql } from 'kysely';
import { connectAgain, createTestStore, suiteScope, usingPostgres, type TestStore } from '../../test/harness.ts';
import { waitFor } from '../../test/wait.ts';
import { SECOND, systemClock } from '../lib/clock.ts';
import { defineJob, retrySchedule } from '../jobs/job.ts';
import { createQueue } from '../jobs/queue.ts';
import { createWorker } from '../jobs/worker.ts';
import type { WakeSignal } from './wake-signal.ts';

const Ping = defineJob({
  name: 'test.ping',
  payload: Type.Object({ n: Type.Integer() }),
  retry: retrySchedule([SECOND], { jitter: 0 }),
  timeoutMs: 1000,
});
const silent = { error: () => undefined, warn: () => undefined };
const HOUR_POLL = 3_600_000;

function signalOf(testStore: TestStore): WakeSignal {
  const { wakeSignal } = testStore.store;
  if (!wakeSignal) throw new Error('a PostgreSQL store has a wake signal');
  return wakeSignal;
}

/** Listens on `testStore`'s signal until the test ends; answers how often it has been called. */
async function hearing(t: TestContext, testStore: TestStore): Promise<() => number> {
  let heard = 0;
  t.after(await signalOf(testStore).listen(() => heard++));
  return () => heard;
}

describe(`the wake signal between processes (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  const suite = suiteScope();

  if (!usingPostgres) {
    it('the embedded store has none: its one process enqueues every job and wakes its worker itself', async () => {
      const testStore = await createTestStore(suite);
      assert.equal(testStore.store.wakeSignal, undefined);
    });
    return;
  }

  it('reaches the other processes, never the one that sent it', async (t) => {
    const here = await createTestStore(suite);
    const there = connectAgain(t, here);
    const heard = await hearing(t, here);
    assert.equal(heard(), 1, 'once on connecting, for what it may have missed');
    // Each send is committed before the next and before the wait: the listener receives them in
    // that order, so once the other process's last one is heard, every earlier one was too.
    for (let i = 0; i < 3; i++) await signalOf(here).send();
    await signalOf(there).send();
    await waitFor(() => heard() >= 2, { message: "the other process's signal" });
    await signalOf(there).send();
    await waitFor(() => heard() >= 3, { message: "the other process's second signal" });
    assert.equal(heard(), 3, 'its own three signals were not heard');
  });

  it('wakes a worker asleep for its poll when another process enqueues, as its own enqueue would', async (t) => {
    const here = await createTestStore(suite);
    const there = connectAgain(t, here);
    const queue = createQueue({ clock: systemClock });
    // Not shared: a finished job then never makes it look again, so only a wake-up can.
    const worker = createWorker({
      db: there.store.db,
      commitWithRequests: there.store.commitWithRequests,
      clock: systemClock,
      log: silent,
      pollMs: HOUR_POLL,
      catalog: [Ping],
      wakeSignal: there.store.wakeSignal,
    });
    const seen: number[] = [];
    worker.register(Ping, async ({ n }) => void seen.push(n));
    worker.start();
    t.after(() => worker.stop(100));
    for (const n of [1, 2, 3]) {
      await here.store.db.transaction().execute((trx) => queue.enqueue(trx, Ping, { n }));
      await signalOf(here).send();
      await waitFor(() => seen.includes(n), { message: `job ${n}, enqueued by another process, to run without the hour's poll` });
    }
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('listens again after its connection is lost, and looks for what it missed', async (t) => {
    const here = await createTestStore(suite);
    const there = connectAgain(t, here);
    const heard = await hearing(t, there);
    const listeners = sql<{ pid: number }>`select pid from pg_stat_activity where query like 'LISTEN %msgsvc_jobs_${sql.raw(here.schema!)}%'`;
    const [listener] = (await listeners.execute(here.store.db)).rows;
    assert.ok(listener, 'a connection listening on the schema’s channel');
    await sql`select pg_terminate_backend(${listener.pid})`.execute(here.store.db);
    await waitFor(() => heard() === 2, { timeoutMs: 10_000, message: 'the look on reconnecting' });
    await signalOf(here).send();
    await waitFor(() => heard() === 3, { message: 'a signal on the new connection' });
  });
});
