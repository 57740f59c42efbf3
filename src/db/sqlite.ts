import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';
import { DEFAULT_CHECKPOINTS, startCheckpoints, type CheckpointOptions, type CheckpointResult, type Checkpoints } from './sqlite-checkpoints.ts';

/**
 * Kysely's SQLite dialect expects the better-sqlite3 interface; no maintained dialect exists for
 * Node's built-in `node:sqlite` (which needs no native build), so this adapter bridges the two:
 * positional parameters are spread, booleans become 0/1 (node:sqlite rejects them), `reader` comes
 * from the statement's result columns, and prepared statements are cached by SQL text because
 * Kysely prepares every query afresh.
 */
const STATEMENT_CACHE_SIZE = 512;

const BUSY_TIMEOUT_MS = 5000;

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
  readonly #checkpoints: Checkpoints | undefined;
  #closed: Promise<void> | undefined;

  constructor(file: string, checkpoints: CheckpointOptions = DEFAULT_CHECKPOINTS) {
    this.#db = new DatabaseSync(file);
    // WAL lets readers proceed during a write; the busy timeout covers a second process (tools,
    // backups) briefly holding the write lock.
    this.#db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS};`);
    if (file !== ':memory:' && checkpoints.intervalMs > 0) {
      this.#db.exec('PRAGMA wal_autocheckpoint = 0');
      this.#checkpoints = startCheckpoints(file, checkpoints);
    }
  }

  /** Whether the checkpoints run on their thread (they stop on close). */
  get checkpointing(): boolean {
    return this.#checkpoints !== undefined && this.#db.isOpen;
  }

  /**
   * Resolves once the file is let go of everywhere after `close()`, the checkpoint thread's
   * connection included. Kysely calls `close()` without waiting, so the store waits here.
   */
  async whenClosed(): Promise<void> {
    await this.#closed;
  }

  /** A checkpoint round now, besides the timer's, for tests; undefined when none ran. */
  checkpoint(): Promise<CheckpointResult | undefined> {
    return this.#checkpoints && this.#db.isOpen ? this.#checkpoints.runNow() : Promise.resolve(undefined);
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
    this.#closed = this.#checkpoints?.stop();
    this.#statements.clear();
    this.#db.close();
  }
}
