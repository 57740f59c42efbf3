// @ts-check
/**
 * Plain JavaScript, as `sqlite-checkpoint-worker.js` is: the checkpoint thread runs it, and a thread
 * that loads a TypeScript file pays for a TypeScript stripper of its own (10 MiB resident, measured).
 * Type-checked from its JSDoc (`// @ts-check`).
 */

/**
 * What `PRAGMA wal_checkpoint` answers: whether it was blocked, the WAL's pages, and those copied.
 * @typedef {{ busy: number; log: number; checkpointed: number }} CheckpointResult
 */

/**
 * One checkpoint round on `db`, wherever it runs (the event loop or the checkpoint thread): PASSIVE
 * copies what it can without waiting for anyone; past `boundPages`, TRUNCATE also empties the file,
 * if it can have the locks at once. TRUNCATE holds back new writers while it waits, so it runs with a
 * busy timeout of 0 (`restoreBusyTimeoutMs` is put back after, on a connection that has one).
 * Undefined when the round could not run: busy or locked by another connection, which only lets the
 * WAL grow until a later round gets through.
 *
 * @param {import('node:sqlite').DatabaseSync} db
 * @param {number} boundPages
 * @param {number} [restoreBusyTimeoutMs]
 * @returns {CheckpointResult | undefined}
 */
export function checkpointRound(db, boundPages, restoreBusyTimeoutMs) {
  try {
    const passive = /** @type {CheckpointResult} */ (/** @type {unknown} */ (db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get()));
    if (passive.log <= boundPages) return passive;
    if (restoreBusyTimeoutMs === undefined) return truncate(db);
    db.exec('PRAGMA busy_timeout = 0');
    try {
      return truncate(db);
    } finally {
      db.exec(`PRAGMA busy_timeout = ${restoreBusyTimeoutMs}`);
    }
  } catch {
    return undefined;
  }
}

/**
 * @param {import('node:sqlite').DatabaseSync} db
 * @returns {CheckpointResult}
 */
function truncate(db) {
  return /** @type {CheckpointResult} */ (/** @type {unknown} */ (db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()));
}
