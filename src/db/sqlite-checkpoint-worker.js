// @ts-check
/**
 * The WAL checkpoints of the SQLite files whose writes outgrew the event loop's rounds, run on a
 * thread of their own (`sqlite-checkpoints.ts` starts it). Each file gets its own connection here
 * (busy timeout 0: see `checkpointRound`), so a round neither waits for the request connection's
 * transactions nor blocks its event loop: a round that copies the pages and syncs the files (tens of
 * milliseconds under load, most of it waiting on fsync) runs beside the requests instead of between
 * them.
 *
 * Plain JavaScript, type-checked from its JSDoc, and importing only JavaScript: a thread that loads a
 * TypeScript file starts a TypeScript stripper of its own: the thread cost 26 MiB resident so, and
 * costs 16 MiB now (measured), in every process whose writes start it.
 */
import { parentPort } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';
import { checkpointRound } from './sqlite-checkpoint-round.js';

/** @typedef {import('./sqlite-checkpoints.ts').CheckpointerMessage} CheckpointerMessage */
/** @typedef {import('./sqlite-checkpoints.ts').CheckpointerReply} CheckpointerReply */
/** @typedef {{ db: DatabaseSync; boundPages: number; timer: NodeJS.Timeout }} Watched */

/** @type {Map<number, Watched>} */
const watched = new Map();

/** @param {Watched} entry */
const round = (entry) => checkpointRound(entry.db, entry.boundPages);

/**
 * @param {CheckpointerMessage} message
 * @returns {CheckpointerReply | undefined}
 */
function handle(message) {
  switch (message.op) {
    case 'open': {
      const db = new DatabaseSync(message.file);
      db.exec('PRAGMA busy_timeout = 0');
      /** @type {Watched} */
      const entry = { db, boundPages: message.boundPages, timer: setInterval(() => round(entry), message.intervalMs) };
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

const port = parentPort;
if (!port) throw new Error('sqlite-checkpoint-worker.js runs as a worker thread (sqlite-checkpoints.ts starts it)');
port.on('message', (/** @type {CheckpointerMessage} */ message) => {
  const reply = handle(message);
  if (reply) port.postMessage(reply);
});
