import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, sql, type Dialect as KyselyDialect, type LogEvent, type Transaction } from 'kysely';
import { Migrator } from 'kysely/migration';
import { sqliteFileIn } from './sqlite-file.ts';
import { NodeSqliteDatabase, NodeSqliteDialect } from './sqlite.ts';
import { postgresDialect, sqliteDialect, type Dialect } from './dialect.ts';
import { migrations } from './migrations/index.ts';
import { JoiningDialect, type CommitWithRequests, type RequestTransaction } from './request-transaction.ts';
import type { Database } from './schema.ts';
import { pgDriver } from './pg-driver.ts';
import { createWakeSignal, type WakeSignal } from './wake-signal.ts';

/** The root handle, or a transaction: what a store function runs its query on. */
export type Db = Kysely<Database>;

/**
 * An open transaction. A function that must be part of its caller's transaction (an event, a job,
 * an audit entry written with the change that causes it) takes this type, and the type checker
 * refuses the root handle there: `isTransaction` is `true` on a transaction and `boolean` on `Db`.
 */
export type Trx = Transaction<Database>;

export interface Store {
  db: Db;
  dialect: Dialect;
  /** Opens the transaction a write request's queries join (`request-transaction.ts`). */
  openRequestTransaction(): Promise<RequestTransaction>;
  /** Runs a write that is not a request's so that it commits with the requests' (grouped on SQLite). */
  commitWithRequests: CommitWithRequests;
  /** Wakes the other processes' workers (PostgreSQL, which several processes share); none on SQLite. */
  wakeSignal: WakeSignal | undefined;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** A postgres:// URL; unset for the embedded SQLite store. */
  databaseUrl?: string | undefined;
  /** The SQLite file, or ':memory:'. Default: `<dataDir>/messaging.sqlite`. */
  sqliteFile?: string;
  dataDir?: string;
  /** PostgreSQL schema to use (created if missing); tests give each run its own. */
  schema?: string;
  poolSize?: number;
  /**
   * How long a query waits for a connection (PostgreSQL), a new one or a turn on the pool's, before
   * it fails as unavailable (503): a database that does not answer, a partition, or a pool
   * overwhelmed. Default 5 s.
   */
  connectTimeoutMs?: number;
  /** Called once per query executed, with its SQL: lets tests prove that a page costs a fixed number of queries. */
  onQuery?: (sql: string) => void;
  /**
   * SQLite only: called with a statement's SQL when SQLite compiles it again while it runs (see
   * `NodeSqliteOptions.onRecompile`): lets tests prove that the hot paths compile each statement once.
   */
  onRecompile?: ((sql: string) => void) | undefined;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

const INT8_OID = 20;
const NUMERIC_OID = 1700;

// pg returns int8 (COUNT(*), SUM) and numeric as strings to avoid precision loss; every such value
// here is a count far below 2^53, so numbers are what the rest of the code expects on both backends.
const pgTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    (oid === INT8_OID || oid === NUMERIC_OID ? (value: string) => Number(value) : pgDriver().types.getTypeParser(oid, format)) as (value: string) => unknown,
};

function queryLogger(options: StoreOptions): ((event: LogEvent) => void) | undefined {
  const { onQuery } = options;
  return onQuery ? (event) => event.level === 'query' && onQuery(event.query.sql) : undefined;
}

export function openStore(options: StoreOptions): Store {
  if (options.databaseUrl) {
    const pool = new (pgDriver().Pool)({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      // Without it, a connection the database never answers is waited for without end, and every
      // request queued behind it with it.
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      types: pgTypes,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    });
    // An idle client's error (the server restarting) must not crash the process; the pool replaces it.
    pool.on('error', () => undefined);
    // Nor may a client's in use: pg emits its broken connection as an 'error' event besides failing
    // its queries, and the pool listens only while a client is idle. The query's failure is what the
    // holder handles; the pool discards the client when it comes back unqueryable.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const wakeSignal = createWakeSignal({
      pool,
      connectionString: options.databaseUrl,
      schema: options.schema,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    });
    return storeOn(new PostgresDialect({ pool }), postgresDialect, options, { wakeSignal });
  }
  const file = options.sqliteFile ?? sqliteFileIn(options.dataDir ?? './data');
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const database = new NodeSqliteDatabase(file, { onRecompile: options.onRecompile });
  return storeOn(new NodeSqliteDialect({ database }), sqliteDialect, options, { whenClosed: () => database.whenClosed() });
}

function storeOn(
  backend: KyselyDialect,
  dialect: Dialect,
  options: StoreOptions,
  extras: { wakeSignal?: WakeSignal; whenClosed?: () => Promise<void> },
): Store {
  const joining = new JoiningDialect(backend);
  const db = new Kysely<Database>({ dialect: joining, log: queryLogger(options) });
  return {
    db,
    dialect,
    openRequestTransaction: () => joining.openRequestTransaction(),
    commitWithRequests: joining.commitWithRequests,
    wakeSignal: extras.wakeSignal,
    close: async () => {
      // Before the pool ends: a signal in flight uses it.
      await extras.wakeSignal?.close();
      await db.destroy();
      await extras.whenClosed?.();
    },
  };
}

/**
 * The store's handle typed by the tables of an owner that is not a module (the sandbox provider's
 * `sandbox_*` tables, migration 0031), with the backend's unique-violation test: what such an owner
 * needs to keep its data in the store, without knowing the service's schema.
 */
export function storeFor<Tables>(store: Store): { db: Kysely<Tables>; isUniqueViolation(error: unknown): boolean } {
  return { db: store.db as unknown as Kysely<Tables>, isUniqueViolation: store.dialect.isUniqueViolation };
}

/**
 * Kysely's migrator looks for its own tables with a catalog query over every schema of the database
 * that calls `has_schema_privilege()` per schema; if another client drops a schema meanwhile (test
 * runs dropping theirs, an operator cleaning up), PostgreSQL fails that query with 3F000 for the
 * other schema, with 42P01 when one of that schema's tables vanishes mid-scan, or with 42703 when
 * another run's migration drops a column the scan is reading (both seen under a parallel catalog
 * scan). Nothing was applied when that happens, so trying again is safe.
 */
const MIGRATION_ATTEMPTS = 8;
const CONCURRENT_DROP_CODES = new Set(['3F000', '42P01', '42703']);

function isConcurrentSchemaDrop(error: unknown): boolean {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  return typeof cause === 'object' && cause !== null && 'code' in cause && CONCURRENT_DROP_CODES.has(String(cause.code));
}

export async function migrateToLatest(store: Store, schema?: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(store, schema);
    } catch (error) {
      if (attempt >= MIGRATION_ATTEMPTS || !isConcurrentSchemaDrop(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

async function migrateOnce(store: Store, schema?: string): Promise<void> {
  if (schema && store.dialect.name === 'postgres') {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(store.db);
  }
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
    ...(schema && store.dialect.name === 'postgres' ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, { cause: error });
  }
  // Migrating a new file writes about 700 pages to the WAL at once. Left there, the first checkpoint
  // round finds the WAL past its threshold and starts the checkpoint thread (about 20 MiB) for a
  // burst that is over; emptied here, the thread starts only once a real load grows the WAL.
  if (store.dialect.name === 'sqlite' && results && results.length > 0) await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(store.db);
}

/** Whether the store answers and every migration is applied: what /readyz reports. */
export async function isStoreReady(store: Store): Promise<boolean> {
  try {
    const applied = await store.db
      .selectFrom('kysely_migration' as never)
      .select(sql<number>`count(*)`.as('count'))
      .executeTakeFirst();
    return Number(applied?.count) === Object.keys(migrations).length;
  } catch {
    return false;
  }
}
