import type { DatabaseSync } from 'node:sqlite';

/** What `PRAGMA wal_checkpoint` answers: whether it was blocked, the WAL's pages, and those copied. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * One checkpoint round on `db`, wherever it runs (the event loop or the checkpoint thread): PASSIVE
 * copies what it can without waiting for anyone; past `boundPages`, TRUNCATE also empties the file,
 * if it can have the locks at once. TRUNCATE holds back new writers while it waits, so it runs with a
 * busy timeout of 0 (`restoreBusyTimeoutMs` is put back after, on a connection that has one).
 * Undefined when the round could not run: busy or locked by another connection, which only lets the
 * WAL grow until a later round gets through.
 */
export function checkpointRound(db: DatabaseSync, boundPages: number, restoreBusyTimeoutMs?: number): CheckpointResult | undefined {
  try {
    const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as unknown as CheckpointResult;
    if (passive.log <= boundPages) return passive;
    if (restoreBusyTimeoutMs === undefined) return db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as unknown as CheckpointResult;
    db.exec('PRAGMA busy_timeout = 0');
    try {
      return db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as unknown as CheckpointResult;
    } finally {
      db.exec(`PRAGMA busy_timeout = ${restoreBusyTimeoutMs}`);
    }
  } catch {
    return undefined;
  }
}
