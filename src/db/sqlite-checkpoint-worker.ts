/**
 * The WAL checkpoints of the SQLite files whose writes outgrew the event loop's rounds, run on a
 * thread of their own (`sqlite-checkpoints.ts` starts it). Each file gets its own connection here
 * (busy timeout 0: see `checkpointRound`), so a round neither waits for the request connection's
 * transactions nor blocks its event loop: a round that copies the pages and syncs the files (tens of
 * milliseconds under load, most of it waiting on fsync) runs beside the requests instead of between
 * them.
 */
import { parentPort } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';
import { checkpointRound } from './sqlite-checkpoint-round.ts';
import type { CheckpointerMessage, CheckpointerReply } from './sqlite-checkpoints.ts';

interface Watched {
  db: DatabaseSync;
  boundPages: number;
  timer: NodeJS.Timeout;
}

const watched = new Map<number, Watched>();

const round = (entry: Watched) => checkpointRound(entry.db, entry.boundPages);

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
