import assert from 'node:assert/strict';
import { afterEach, before, describe, it } from 'node:test';
import Type from 'typebox';
import type { JobsTable } from '../db/schema.ts';
import { DAY, HOUR, MINUTE, ManualClock } from '../lib/clock.ts';
import { createTestStore, suiteScope, usingPostgres, type TestStore } from '../../test/harness.ts';
import { jobPurge } from './catalog.ts';
import { NO_RETRY, defineJob } from './job.ts';
import { createQueueMaintenance, queueMaintenanceJobs } from './maintenance.ts';
import { purgeInBatches } from './purge.ts';
import { createWorker, type WorkerLog } from './worker.ts';

const silent = { error: () => undefined, warn: () => undefined };
const Tick = defineJob({ name: 'test.tick', payload: Type.Object({ n: Type.Integer() }), retry: NO_RETRY, timeoutMs: 1000 });
const NOW = Date.parse('2026-07-01T12:30:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

describe(`the queue's housekeeping (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let testStore: TestStore;
  let serial = 0;
  const suite = suiteScope();
  before(async () => {
    testStore = await createTestStore(suite);
  });
  afterEach(async () => {
    await testStore.store.db.deleteFrom('jobs').execute();
  });

  /** A job as some worker left it: `id` names the case, so a test can say which ones remain. */
  async function insertJob(id: string, fields: Partial<JobsTable> & Pick<JobsTable, 'status' | 'run_at'>): Promise<void> {
    await testStore.store.db
      .insertInto('jobs')
      .values({
        id,
        name: Tick.name,
        payload: JSON.stringify({ n: serial++ }),
        attempts: 1,
        max_attempts: 1,
        locked_by: null,
        locked_until: null,
        last_error: null,
        dedupe_key: null,
        created_at: fields.run_at,
        updated_at: fields.run_at,
        ...fields,
      })
      .execute();
  }
  const remaining = async () => (await testStore.store.db.selectFrom('jobs').select('id').orderBy('id').execute()).map((row) => row.id);
  const maintenance = (log: WorkerLog = silent) =>
    createQueueMaintenance({ db: testStore.store.db, clock: new ManualClock(NOW), log, catalog: [Tick, jobPurge] });

  it('deletes succeeded jobs after 7 days and failed ones after 30, never a queued or running one', async () => {
    await insertJob('succeeded_8d', { status: 'succeeded', run_at: ago(8 * DAY) });
    await insertJob('succeeded_8d_keyed', { status: 'succeeded', run_at: ago(8 * DAY), dedupe_key: 'window:ct_1:x' });
    await insertJob('succeeded_6d', { status: 'succeeded', run_at: ago(6 * DAY) });
    await insertJob('succeeded_late', { status: 'succeeded', run_at: ago(8 * DAY), updated_at: ago(DAY) });
    await insertJob('failed_8d', { status: 'failed', run_at: ago(8 * DAY) });
    await insertJob('failed_31d', { status: 'failed', run_at: ago(31 * DAY) });
    await insertJob('queued_60d', { status: 'queued', run_at: ago(60 * DAY), attempts: 0 });
    await insertJob('running_60d', { status: 'running', run_at: ago(60 * DAY), locked_by: 'wrk_gone', locked_until: ago(60 * DAY) });

    assert.deepEqual(await maintenance().purgeFinished(), { deleted: 3, complete: true });
    assert.deepEqual(await remaining(), ['failed_8d', 'queued_60d', 'running_60d', 'succeeded_6d', 'succeeded_late']);
  });

  it('a slot job is kept long after its slot ended, so its key still refuses the slot', async () => {
    await insertJob('slot_yesterday', { status: 'succeeded', run_at: ago(DAY), dedupe_key: 'job.purge@2026-06-30T12:00:00.000Z' });
    await maintenance().purgeFinished();
    assert.deepEqual(await remaining(), ['slot_yesterday']);
  });

  it('deletes in batches, and leaves the rest for the next run when its time is up', async () => {
    for (let i = 0; i < 25; i++) await insertJob(`old_${String(i).padStart(2, '0')}`, { status: 'succeeded', run_at: ago(10 * DAY) });
    assert.deepEqual(await maintenance().purgeFinished({ batchSize: 10, budgetMs: 0 }), { deleted: 10, complete: false });
    assert.equal((await remaining()).length, 15);
    assert.deepEqual(await maintenance().purgeFinished({ batchSize: 10 }), { deleted: 15, complete: true });
    assert.deepEqual(await remaining(), []);
  });

  it('a purge loop stops when a batch comes back short, or when its job is aborted', async () => {
    const batches = (sizes: number[]) => {
      const calls: number[] = [];
      return { calls, delete: async (limit: number) => (calls.push(limit), sizes.shift() ?? 0) };
    };
    const short = batches([3, 3, 1]);
    assert.deepEqual(await purgeInBatches(short.delete, { batchSize: 3 }), { deleted: 7, complete: true });
    assert.deepEqual(short.calls, [3, 3, 3]);
    const aborted = batches([3, 3, 3]);
    const abort = new AbortController();
    abort.abort();
    assert.deepEqual(await purgeInBatches(aborted.delete, { batchSize: 3, signal: abort.signal }), { deleted: 3, complete: false });
  });

  it('warns of queued jobs no version here knows once they have waited an hour, not during a deploy', async () => {
    await insertJob('retired_1', { status: 'queued', run_at: ago(2 * HOUR), name: 'test.retired', attempts: 0 });
    await insertJob('retired_2', { status: 'queued', run_at: ago(3 * DAY), name: 'test.retired', attempts: 0 });
    await insertJob('brand_new', { status: 'queued', run_at: ago(10 * MINUTE), name: 'test.brand_new', attempts: 0 });
    await insertJob('known_backlog', { status: 'queued', run_at: ago(2 * HOUR), attempts: 0 });
    await insertJob('retired_done', { status: 'succeeded', run_at: ago(2 * HOUR), name: 'test.retired' });
    const warnings: object[] = [];
    const stranded = await maintenance({ error: () => undefined, warn: (object: object) => void warnings.push(object) }).reportStranded();
    assert.deepEqual(stranded, [{ name: 'test.retired', count: 2 }]);
    assert.deepEqual(warnings, [{ job: 'test.retired', count: 2 }]);
    assert.equal((await remaining()).length, 5, 'reported, not touched');
  });

  it('runs as the hourly job.purge, beside the other work', async () => {
    const clock = new ManualClock(NOW);
    const worker = createWorker({
      db: testStore.store.db,
      commitWithRequests: testStore.store.commitWithRequests,
      clock,
      log: silent,
      catalog: [Tick, jobPurge],
    });
    const ticks: number[] = [];
    worker.register(Tick, async ({ n }) => void ticks.push(n));
    for (const job of queueMaintenanceJobs({ db: testStore.store.db, clock, log: silent, catalog: [Tick, jobPurge] }))
      worker.register(job.definition, job.handler);
    worker.assertComplete();
    await insertJob('succeeded_8d', { status: 'succeeded', run_at: ago(8 * DAY) });
    await insertJob('due_tick', { status: 'queued', run_at: ago(MINUTE), attempts: 0, payload: JSON.stringify({ n: 42 }) });
    assert.equal(await worker.drain(), 2);
    assert.deepEqual(ticks, [42]);
    const jobs = await testStore.store.db.selectFrom('jobs').select(['id', 'name', 'status', 'dedupe_key']).orderBy('name').execute();
    assert.deepEqual(
      jobs.map(({ name, status, dedupe_key }) => ({ name, status, dedupe_key })),
      [
        { name: 'job.purge', status: 'succeeded', dedupe_key: 'job.purge@2026-07-01T12:00:00.000Z' },
        { name: 'test.tick', status: 'succeeded', dedupe_key: null },
      ],
    );
  });
});
