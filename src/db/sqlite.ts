import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Kysely's SQLite dialect expects the better-sqlite3 interface; no maintained dialect exists for
 * Node's built-in `node:sqlite` (which needs no native build), so this adapter bridges the two:
 * positional parameters are spread, booleans become 0/1 (node:sqlite rejects them), `reader` comes
 * from the statement's result columns, and prepared statements are cached by SQL text because
 * Kysely prepares every query afresh.
 */
const STATEMENT_CACHE_SIZE = 512;

/**
 * WAL checkpoints, off the request path. SQLite's automatic checkpoint runs inside the commit that
 * takes the WAL past 1,000 pages, so every so often one request paid for copying the pages of all the
 * others (~90 µs a send on average). Here automatic checkpoints are off (`wal_autocheckpoint = 0`) and
 * a timer checkpoints instead: PASSIVE every `intervalMs` (it copies what it can without waiting for
 * anyone), and once the WAL has grown past `boundPages` TRUNCATE (which also empties the file) if it
 * can have the lock at once. The WAL thus holds about what `intervalMs` of writes produce, and never
 * stays past the bound for longer than it takes to get the lock. Between checkpoints, a page written
 * by many requests is copied once: in a measurement of 20,000 small write transactions, rounds every
 * 400 commits cost 70–75 µs of checkpointing a transaction, rounds every 100 commits 120–170 µs, so
 * the interval is a second rather than a quarter of one.
 */
export interface CheckpointOptions {
  /** How often the PASSIVE checkpoint runs; 0 leaves SQLite's automatic checkpoints on. */
  intervalMs: number;
  /** WAL pages past which the timer truncates the WAL. */
  boundPages: number;
}

export const DEFAULT_CHECKPOINTS: CheckpointOptions = { intervalMs: 1000, boundPages: 4096 };

const BUSY_TIMEOUT_MS = 5000;

/** What `PRAGMA wal_checkpoint` answers: whether it was blocked, the WAL's pages, and those copied. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object' && !(value instanceof Uint8Array)) return JSON.stringify(value);
  return value as SQLInputValue;
}

class NodeSqliteStatement implements SqliteStatement {
  readonly #statement: StatementSync;
  readonly reader: boolean;

  constructor(statement: StatementSync) {
    this.#statement = statement;
    this.reader = statement.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#statement.all(...parameters.map(toSqlite));
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return this.#statement.run(...parameters.map(toSqlite));
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#statement.iterate(...parameters.map(toSqlite));
  }
}

export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, NodeSqliteStatement>();
  readonly #checkpoints: CheckpointOptions;
  #timer: NodeJS.Timeout | undefined;

  constructor(file: string, checkpoints: CheckpointOptions = DEFAULT_CHECKPOINTS) {
    this.#db = new DatabaseSync(file);
    this.#checkpoints = checkpoints;
    // WAL lets readers proceed during a write; the busy timeout covers a second process (tools,
    // backups) briefly holding the write lock.
    this.#db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS};`);
    if (file !== ':memory:' && checkpoints.intervalMs > 0) {
      this.#db.exec('PRAGMA wal_autocheckpoint = 0');
      // Unref'd: a checkpoint timer must never keep the process alive.
      this.#timer = setInterval(() => this.checkpoint(), checkpoints.intervalMs).unref();
    }
  }

  /** Whether the background checkpoints run (they stop on close). */
  get checkpointing(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * One round of the background checkpoint; answers what SQLite reported, or undefined when it did
   * not run. Called by the timer; public so that tests need not wait for it.
   */
  checkpoint(): CheckpointResult | undefined {
    // Between the statements of an open transaction (Kysely awaits between them) a checkpoint on this
    // connection fails with "database table is locked"; the next round will do.
    if (!this.#db.isOpen || this.#db.isTransaction) return undefined;
    try {
      const passive = this.#db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as unknown as CheckpointResult;
      if (passive.log <= this.#checkpoints.boundPages) return passive;
      // TRUNCATE waits for other processes' readers and writers through the busy handler; the timer
      // must not block the event loop for that, so it asks only for the lock it can have now.
      this.#db.exec('PRAGMA busy_timeout = 0');
      try {
        return this.#db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as unknown as CheckpointResult;
      } finally {
        this.#db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      }
    } catch {
      // Busy or locked by another process: the WAL only grows until a later round gets through.
      return undefined;
    }
  }

  prepare(text: string): SqliteStatement {
    // Kysely opens transactions with a plain (deferred) `begin`: two connections that both read and
    // then write deadlock on the lock upgrade. Taking the write lock up front makes the second wait
    // (busy_timeout) instead, which is the single-writer discipline the queue relies on.
    const sql = text === 'begin' ? 'begin immediate' : text;
    const cached = this.#statements.get(sql);
    if (cached) {
      // Re-insert to keep the map in least-recently-used order.
      this.#statements.delete(sql);
      this.#statements.set(sql, cached);
      return cached;
    }
    const statement = new NodeSqliteStatement(this.#db.prepare(sql));
    if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
      const oldest = this.#statements.keys().next().value;
      if (oldest !== undefined) this.#statements.delete(oldest);
    }
    this.#statements.set(sql, statement);
    return statement;
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#statements.clear();
    this.#db.close();
  }
}
