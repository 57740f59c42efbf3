import type { SelectQueryBuilder } from 'kysely';

/**
 * Everything that differs between the embedded SQLite store and PostgreSQL lives here, so that no
 * query elsewhere branches on the backend. The schema keeps the two identical by storing timestamps
 * as ISO-8601 UTC text (fixed width, so text order is time order), JSON as text, and booleans as
 * 0/1 integers.
 */
export type DialectName = 'sqlite' | 'postgres';

export interface Dialect {
  readonly name: DialectName;
  /**
   * Whether several service processes may use the database at once (PostgreSQL), so that rows such
   * as queued jobs appear that this process never wrote. The embedded SQLite file has one.
   */
  readonly sharedByProcesses: boolean;
  /** True when the error is a unique-constraint violation. */
  isUniqueViolation(error: unknown): boolean;
  /**
   * True when the store could not be reached or is overloaded (as opposed to a bug in a query): the
   * client is told to retry (503) instead of being shown an internal error.
   */
  isUnavailable(error: unknown): boolean;
  /**
   * Locks the selected rows for the rest of the transaction, skipping rows another transaction holds.
   * SQLite has a single writer, so its transactions are already exclusive and this is a no-op there.
   */
  lockSkipLocked<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /**
   * Locks the selected rows for the rest of the transaction, waiting for another transaction that
   * holds them: `FOR NO KEY UPDATE` on PostgreSQL, the lock an `UPDATE` of non-key columns takes, and
   * after the wait PostgreSQL re-reads each row and drops those that no longer match. A no-op on
   * SQLite, where every transaction that writes begins with `begin immediate` (db/sqlite.ts) and so
   * already holds the only write lock while it reads.
   */
  lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
}

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : '';
}

// Kysely's own words once its pool or connection is gone.
const DESTROYED = /driver has already been destroyed|connection is closed|database is not open/i;
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH']);

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  sharedByProcesses: false,
  isUniqueViolation: (error) => errorCode(error) === 'ERR_SQLITE_ERROR' && /UNIQUE constraint failed/.test(String((error as Error).message)),
  lockSkipLocked: (query) => query,
  lockRows: (query) => query,
  isUnavailable: (error) => DESTROYED.test(errorMessage(error)) || /database is locked|SQLITE_BUSY/i.test(errorMessage(error)),
};

export const postgresDialect: Dialect = {
  name: 'postgres',
  sharedByProcesses: true,
  isUniqueViolation: (error) => errorCode(error) === '23505',
  lockSkipLocked: (query) => query.forUpdate().skipLocked(),
  lockRows: (query) => query.forNoKeyUpdate(),
  isUnavailable: (error) => {
    const code = errorCode(error);
    // SQLSTATE class 08 is connection exceptions; 57P0x is the server shutting down or starting up;
    // 53300 is too many connections.
    if (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P0') || code === '53300' || NETWORK_CODES.has(code))) return true;
    // node-postgres's own words: a connection that broke (under a query, or before the next one of a
    // transaction that held it), or no connection to be had in time.
    return DESTROYED.test(errorMessage(error)) || /Connection terminated|is not queryable|timeout exceeded when trying to connect/i.test(errorMessage(error));
  },
};

export function toBoolean(value: number | boolean): boolean {
  return value === true || value === 1;
}

export function parseJson<T>(value: string | null): T | null {
  return value === null ? null : (JSON.parse(value) as T);
}
