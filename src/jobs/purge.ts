import { SECOND } from '../lib/clock.ts';

/**
 * Deleting many old rows without holding a table for long: each statement deletes a bounded batch,
 * and the loop stops when a batch comes back short (nothing left), when its time budget is spent or
 * when the job running it is aborted. What is left waits for the next run.
 */
export const PURGE_BATCH_SIZE = 1_000;
export const PURGE_BUDGET_MS = 20 * SECOND;

export interface PurgeOptions {
  batchSize?: number;
  budgetMs?: number;
  signal?: AbortSignal;
}

export interface PurgeResult {
  deleted: number;
  /** False when the budget or an abort stopped the loop with rows possibly left. */
  complete: boolean;
}

/** Runs `deleteBatch(limit)`, which returns how many rows it deleted, until one of the stops above. */
export async function purgeInBatches(deleteBatch: (limit: number) => Promise<number>, options: PurgeOptions = {}): Promise<PurgeResult> {
  const batchSize = options.batchSize ?? PURGE_BATCH_SIZE;
  // The budget is the process's own running time, not the service's clock: it bounds how long the
  // store is kept busy, and a manual clock standing still in a test must not make it endless.
  const deadline = performance.now() + (options.budgetMs ?? PURGE_BUDGET_MS);
  let deleted = 0;
  for (;;) {
    const count = await deleteBatch(batchSize);
    deleted += count;
    if (count < batchSize) return { deleted, complete: true };
    if (performance.now() >= deadline || options.signal?.aborted) return { deleted, complete: false };
  }
}
