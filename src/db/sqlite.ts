import { statSync } from 'node:fs';
import { constants, DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { SqliteDialect, SqliteQueryCompiler, type LimitNode, type QueryCompiler, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { checkpointRound, type CheckpointResult } from './sqlite-checkpoint-round.js';
import { DEFAULT_CHECKPOINTS, startCheckpoints, type CheckpointOptions, type Checkpoints } from './sqlite-checkpoints.ts';

/**
 * Kysely's SQLite dialect expects the better-sqlite3 interface; no maintained dialect exists for
 * Node's built-in `node:sqlite` (which needs no native build), so this adapter bridges the two:
 * positional parameters are spread, booleans become 0/1 (node:sqlite rejects them), `reader` comes
 * from the statement's result columns, and prepared statements are cached by SQL text because
 * Kysely prepares every query afresh.
 */
const STATEMENT_CACHE_SIZE = 512;

const BUSY_TIMEOUT_MS = 5000;

/**
 * Every connection's settings; exported for the benches' floors, which read and write the service's
 * file as the service does. Why each, where the connection opens (NodeSqliteDatabase).
 */
export const CONNECTION_PRAGMAS = `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS};`;

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object' && !(value instanceof Uint8Array)) return JSON.stringify(value);
  return value as SQLInputValue;
}

/**
 * Kysely's SQLite compiler, but for `limit`: SQLite (3.53 here) plans a query with the value bound to
 * a bare `limit ?` and marks the statement to be compiled again whenever that parameter is bound,
 * which node:sqlite does on every run. Every paged list, every `.limit(1)` and the job claims were
 * so compiled on every call: 16 µs of a 55 µs list page query, 4 % of a conversations page's CPU
 * (measured). `limit cast(? as integer)` is the same limit to SQLite, read at run time, and the
 * statement is compiled once (tested with SQLite's authorizer, which sees every compilation).
 */
class NodeSqliteQueryCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    this.append('limit cast(');
    this.visitNode(node.limit);
    this.append(' as integer)');
  }
}

/** Kysely's SQLite dialect with the compiler above. */
export class NodeSqliteDialect extends SqliteDialect {
  override createQueryCompiler(): QueryCompiler {
    return new NodeSqliteQueryCompiler();
  }
}

export type RowMaker = (values: unknown[]) => Record<string, unknown>;

/**
 * A function that makes a statement's row object from its values in column order. node:sqlite's own
 * row objects are built in dictionary mode, so every later read of a column (mappers, serializers)
 * is a hash look-up: rows read as arrays and made into objects by a literal of the statement's
 * columns share one hidden class, and a 26-row page read and mapped took 39 µs instead of 59
 * (measured). The names are JSON-quoted; a column named `__proto__` is a computed key so that it
 * stays a column and never sets the prototype. Of two columns with one name the later wins, as in
 * node:sqlite's objects.
 */
export function rowMaker(columns: readonly string[]): RowMaker {
  const fields = columns.map((name, index) => `${name === '__proto__' ? `[${JSON.stringify(name)}]` : JSON.stringify(name)}: values[${index}]`);
  // Generated code, as fast-json-stringify does: only column names reach it, each JSON-quoted.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('values', `return { ${fields.join(', ')} };`) as RowMaker;
}

/**
 * Which statement is running, for `onRecompile`: SQLite's authorizer is called whenever a statement
 * is compiled, so a call while a statement runs is that statement compiled again.
 */
interface RecompileWatch {
  running: string | undefined;
}

class NodeSqliteStatement implements SqliteStatement {
  readonly #statement: StatementSync;
  readonly #row: RowMaker | undefined;
  readonly #watch: RecompileWatch | undefined;
  readonly reader: boolean;

  constructor(statement: StatementSync, watch: RecompileWatch | undefined) {
    this.#statement = statement;
    this.#watch = watch;
    const columns = statement.columns();
    this.reader = columns.length > 0;
    if (this.reader) {
      statement.setReturnArrays(true);
      this.#row = rowMaker(columns.map((column) => column.name));
    }
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const watch = this.#watch;
    if (watch) watch.running = this.#statement.sourceSQL;
    let rows: unknown[][];
    try {
      rows = this.#statement.all(...parameters.map(toSqlite)) as unknown as unknown[][];
    } finally {
      if (watch) watch.running = undefined;
    }
    const row = this.#row;
    if (!row) return rows;
    const objects = new Array<Record<string, unknown>>(rows.length);
    for (let index = 0; index < rows.length; index++) objects[index] = row(rows[index]!);
    return objects;
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    const watch = this.#watch;
    if (watch) watch.running = this.#statement.sourceSQL;
    try {
      return this.#statement.run(...parameters.map(toSqlite));
    } finally {
      if (watch) watch.running = undefined;
    }
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    const row = this.#row;
    const watch = this.#watch;
    // The statement runs (and would be compiled again) on its first step, the loop's first turn.
    if (watch) watch.running = this.#statement.sourceSQL;
    try {
      for (const values of this.#statement.iterate(...parameters.map(toSqlite)) as IterableIterator<unknown>) {
        if (watch) watch.running = undefined;
        yield row ? row(values as unknown[]) : values;
      }
    } finally {
      if (watch) watch.running = undefined;
    }
  }
}

export interface NodeSqliteOptions {
  checkpoints?: CheckpointOptions;
  /**
   * Called with a statement's SQL when SQLite compiles it again while it runs, which it does after a
   * schema change and, for some SQL, on every run (a bare `limit ?`; a parameter compared where a
   * partial index has a constant; `like ?`). For tests that hold hot paths to one compilation per
   * statement; unset, no authorizer is installed.
   */
  onRecompile?: ((sql: string) => void) | undefined;
}

export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, NodeSqliteStatement>();
  readonly #file: string;
  readonly #checkpointOptions: CheckpointOptions;
  readonly #pageSize: number;
  readonly #watch: RecompileWatch | undefined;
  /** The event loop's rounds, until a round finds the WAL past `threadAfterPages`. */
  #timer: NodeJS.Timeout | undefined;
  /** The thread's rounds, from then on. */
  #thread: Checkpoints | undefined;
  #closed: Promise<void> | undefined;

  constructor(file: string, options: NodeSqliteOptions = {}) {
    const checkpoints = options.checkpoints ?? DEFAULT_CHECKPOINTS;
    this.#db = new DatabaseSync(file);
    this.#file = file;
    this.#checkpointOptions = checkpoints;
    // WAL lets readers proceed during a write; the busy timeout covers a second process (tools,
    // backups) briefly holding the write lock.
    //
    // temp_store = MEMORY keeps savepoint journals in memory. Each member of a commit group after
    // the first runs in a savepoint (request-transaction.ts). The savepoint journals every page the
    // member changes: a send changes about 25 pages, about 100 KiB. Past 64 KiB SQLite moves that
    // journal to a temporary file, then writes one system call per page. Under the send bench's load
    // those writes were 11–14 % of the server's CPU (perf). SQLite's sorter still uses files past its
    // memory budget. What moves into memory are the temporary tables some statements build: batch
    // deletes, `returning` rows and one-row updates, and the ids behind a `?tag=` filter. Their size
    // is the rows a statement touches (docs/benchmarks.md, twelfth pass).
    this.#db.exec(CONNECTION_PRAGMAS);
    this.#pageSize = (this.#db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size;
    if (file !== ':memory:' && checkpoints.intervalMs > 0) {
      this.#db.exec('PRAGMA wal_autocheckpoint = 0');
      if (checkpoints.threadAfterPages === 0) this.#moveToThread();
      // Unref'd: a checkpoint timer must never keep the process alive.
      else this.#timer = setInterval(() => void this.#roundHere(), checkpoints.intervalMs).unref();
    }
    const { onRecompile } = options;
    if (onRecompile) {
      const watch: RecompileWatch = { running: undefined };
      this.#watch = watch;
      this.#db.setAuthorizer(() => {
        if (watch.running !== undefined) onRecompile(watch.running);
        // One report per run, however many objects the compilation names.
        watch.running = undefined;
        return constants.SQLITE_OK;
      });
    }
  }

  /** Whether the checkpoints run, on the event loop or on the thread (they stop on close). */
  get checkpointing(): boolean {
    return this.#db.isOpen && (this.#timer !== undefined || this.#thread !== undefined);
  }

  /** Whether they run on the checkpoint thread. */
  get checkpointsOnThread(): boolean {
    return this.#db.isOpen && this.#thread !== undefined;
  }

  /**
   * Resolves once the file is let go of everywhere after `close()`, the checkpoint thread's
   * connection included. Kysely calls `close()` without waiting, so the store waits here.
   */
  async whenClosed(): Promise<void> {
    await this.#closed;
  }

  /** A checkpoint round now, besides the timer's, for tests; undefined when none ran. */
  async checkpoint(): Promise<CheckpointResult | undefined> {
    if (!this.#db.isOpen) return undefined;
    return this.#thread?.runNow() ?? this.#roundHere();
  }

  /**
   * A round on the event loop, unless the WAL grew past `threadAfterPages` since the last: then the
   * rounds move to the thread first, and the thread runs this one, which here would block the
   * requests for its length. The WAL file's size is its high-water mark (a PASSIVE round reuses the
   * file and never shrinks it).
   */
  #roundHere(): Promise<CheckpointResult | undefined> | CheckpointResult | undefined {
    if (!this.#db.isOpen || this.#thread) return undefined;
    if (this.#walPages() > this.#checkpointOptions.threadAfterPages) {
      this.#moveToThread();
      return this.#thread!.runNow();
    }
    // Between the statements of an open transaction (Kysely awaits between them) a checkpoint on this
    // connection fails with "database table is locked"; the next round will do.
    if (this.#db.isTransaction) return undefined;
    return checkpointRound(this.#db, this.#checkpointOptions.boundPages, BUSY_TIMEOUT_MS);
  }

  #walPages(): number {
    try {
      // The WAL's header is 32 bytes; each frame is a 24-byte header and a page.
      return Math.floor((statSync(`${this.#file}-wal`).size - 32) / (this.#pageSize + 24));
    } catch {
      return 0;
    }
  }

  #moveToThread(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#thread = startCheckpoints(this.#file, this.#checkpointOptions);
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
    const statement = new NodeSqliteStatement(this.#db.prepare(sql), this.#watch);
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
    this.#closed = this.#thread?.stop();
    this.#statements.clear();
    this.#db.close();
  }
}
