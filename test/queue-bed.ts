/** What the job-queue suites share: one store for the block, and the workers each test starts. */
import { afterEach, before } from 'node:test';
import type { Worker } from '../src/jobs/worker.ts';
import { createTestStore, suiteScope, type TestStore } from './harness.ts';

export interface QueueBed {
  /** The block's store, made before its first test. */
  readonly testStore: TestStore;
  /** Keeps a worker to stop after the test; answers it. */
  track(worker: Worker): Worker;
  /** Stops every worker started so far (a test that must stop them before it asserts). */
  stopWorkers(): Promise<void>;
}

/** Call in a `describe` body: after each test its workers are stopped and its jobs removed. */
export function queueBed(): QueueBed {
  const suite = suiteScope();
  let testStore: TestStore | undefined;
  const workers: Worker[] = [];
  const bed: QueueBed = {
    get testStore() {
      if (!testStore) throw new Error('the queue bed is ready only once the block has started');
      return testStore;
    },
    track(worker) {
      workers.push(worker);
      return worker;
    },
    async stopWorkers() {
      await Promise.all(workers.splice(0).map((worker) => worker.stop(100)));
    },
  };
  before(async () => {
    testStore = await createTestStore(suite);
  });
  afterEach(async () => {
    await bed.stopWorkers();
    await bed.testStore.store.db.deleteFrom('jobs').execute();
  });
  return bed;
}
