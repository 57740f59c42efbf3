/**
 * The WAL checkpointer of a SQLite store, on a worker thread with a connection of its own (see
 * `sqlite.ts`): a round every `intervalMs`, so that copying pages and syncing the file never holds
 * the main thread's event loop. Its connection never waits for a lock (busy timeout 0): a round that
 * cannot have one is skipped, and the next one catches up.
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { checkpointRound, type CheckpointOptions, type CheckpointResult } from './sqlite.ts';

const { file, intervalMs, boundPages } = workerData as CheckpointOptions & { file: string };
const db = new DatabaseSync(file);
db.exec('PRAGMA busy_timeout = 0');

const timer = setInterval(() => {
  try {
    checkpointRound(db, boundPages, () => db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as unknown as CheckpointResult);
  } catch {
    // Busy or locked: the WAL only grows until a later round gets through.
  }
}, intervalMs);

parentPort?.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
