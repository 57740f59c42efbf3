import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Type from 'typebox';
import { ManualClock, MINUTE, SECOND } from '../lib/clock.ts';
import { createTestStore, usingPostgres } from '../../test/harness.ts';
import { readJobBacklog } from './backlog.ts';
import { defineJob, NO_RETRY } from './job.ts';
import { createQueue } from './queue.ts';

const job = (name: string) => defineJob({ name, payload: Type.Object({ n: Type.Integer() }), retry: NO_RETRY, timeoutMs: SECOND });
const Alpha = job('test.alpha');
const Beta = job('test.beta');

describe(`the job backlog (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('counts due and running jobs per name with the oldest due time, in one bounded read', async (t) => {
    const { store } = await createTestStore(t);
    const clock = new ManualClock('2026-06-01T12:00:00Z');
    const queue = createQueue({ clock });
    const ids: string[] = [];
    await store.db.transaction().execute(async (trx) => {
      for (let n = 0; n < 3; n++) {
        ids.push(await queue.enqueue(trx, Alpha, { n }));
        clock.advance(SECOND);
      }
      await queue.enqueue(trx, Beta, { n: 0 });
      // Due later: a retry or a timer is not backlog.
      await queue.enqueue(trx, Beta, { n: 1 }, { runAt: new Date(clock.now().getTime() + MINUTE) });
    });
    await store.db.updateTable('jobs').set({ status: 'running' }).where('id', '=', ids[0]!).execute();
    await store.db.updateTable('jobs').set({ status: 'succeeded' }).where('id', '=', ids[1]!).execute();

    const backlog = await readJobBacklog(store.db, clock.now());
    assert.equal(backlog.complete, true);
    assert.deepEqual(Object.fromEntries(backlog.byName), {
      'test.alpha': { due: 1, oldestDueAt: '2026-06-01T12:00:02.000Z', running: 1 },
      'test.beta': { due: 1, oldestDueAt: '2026-06-01T12:00:03.000Z', running: 0 },
    });

    // At its limit the read keeps the jobs that have waited longest, and says its counts are partial.
    const partial = await readJobBacklog(store.db, clock.now(), 1);
    assert.equal(partial.complete, false);
    assert.deepEqual(Object.fromEntries(partial.byName), { 'test.alpha': { due: 1, oldestDueAt: '2026-06-01T12:00:02.000Z', running: 1 } });

    const empty = await readJobBacklog(store.db, new Date('2026-06-01T11:00:00Z'));
    assert.deepEqual(Object.fromEntries(empty.byName), { 'test.alpha': { due: 0, oldestDueAt: undefined, running: 1 } });
  });
});
