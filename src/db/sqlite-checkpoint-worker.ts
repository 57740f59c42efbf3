/**
 * The WAL checkpoints of every SQLite file this process opens, run on a thread of their own
 * (`sqlite-checkpoints.ts` starts it). Each file gets its own connection here, so a round neither
 * waits for the request connection's transactions nor blocks its event loop: a round that copies
 * the pages and syncs the files (tens of milliseconds under load, most of it waiting on fsync)
 * runs beside the requests instead of between them.
 */
import { parentPort } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';
import type { CheckpointResult, CheckpointerMessage, CheckpointerReply } from './sqlite-checkpoints.ts';

interface Watched {
  db: DatabaseSync;
  boundPages: number;
  timer: NodeJS.Timeout;
}

const watched = new Map<number, Watched>();

/**
 * One round: PASSIVE copies what it can without waiting for anyone; past the bound, TRUNCATE also
 * empties the file, if it can have the locks at once. The busy timeout is 0 on this connection:
 * TRUNCATE holds back new writers while it waits, so waiting here would stall the requests.
 */
function round(entry: Watched): CheckpointResult | undefined {
  try {
    const passive = entry.db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as unknown as CheckpointResult;
    if (passive.log <= entry.boundPages) return passive;
    return entry.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as unknown as CheckpointResult;
  } catch {
    // Busy or locked by another process or connection: the WAL only grows until a later round gets through.
    return undefined;
  }
}

function handle(message: CheckpointerMessage): CheckpointerReply | undefined {
  switch (message.op) {
    case 'open': {
      const db = new DatabaseSync(message.file);
      db.exec('PRAGMA busy_timeout = 0');
      const entry: Watched = { db, boundPages: message.boundPages, timer: setInterval(() => round(entry), message.intervalMs) };
      watched.set(message.id, entry);
      return undefined;
    }
    case 'round': {
      const entry = watched.get(message.id);
      return { request: message.request, result: entry ? round(entry) : undefined };
    }
    case 'close': {
      const entry = watched.get(message.id);
      if (entry) {
        watched.delete(message.id);
        clearInterval(entry.timer);
        // The last connection to close checkpoints the WAL and removes it.
        entry.db.close();
      }
      return { request: message.request, result: undefined };
    }
  }
}

parentPort!.on('message', (message: CheckpointerMessage) => {
  const reply = handle(message);
  if (reply) parentPort!.postMessage(reply);
});
