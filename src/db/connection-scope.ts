import { sql, type SelectQueryBuilder } from 'kysely';
import type { Database } from './schema.ts';

/**
 * Who may see what belongs to a connection: everything of the organization, narrowed to one
 * connection for a connection key and to the test connections for a test key.
 */
export interface ConnectionScope {
  organizationId: string;
  /** A connection key sees only its own connection's resources. */
  connectionId?: string | null | undefined;
  /** Only the resources of connections with this `test` flag: a test key sees test connections only. */
  test?: boolean | undefined;
}

/** The tables whose rows belong to a connection (`organization_id`, `connection_id`). */
export type ConnectionOwnedTable = 'messages' | 'templates' | 'conversations' | 'notifications' | 'notification_batches' | 'schedules';

/** Narrows a query on a connection-owned table to what the scope may see: a row is visible when its connection is. */
export function visibleThroughConnection<T extends ConnectionOwnedTable, O>(
  query: SelectQueryBuilder<Database, T, O>,
  table: T,
  scope: ConnectionScope,
): SelectQueryBuilder<Database, T, O> {
  let narrowed = query.where(sql.ref(`${table}.organization_id`), '=', scope.organizationId);
  if (scope.connectionId) narrowed = narrowed.where(sql.ref(`${table}.connection_id`), '=', scope.connectionId);
  if (scope.test === undefined) return narrowed;
  const test = scope.test ? 1 : 0;
  return narrowed.where(
    sql<boolean>`exists (select 1 from connections where connections.id = ${sql.ref(`${table}.connection_id`)} and connections.test = ${test})`,
  );
}

/**
 * The scope as the parameters of a compiled query (db/compiled-query.ts): exactly its three fields,
 * so that a caller's object with more in it cannot add a value the query does not use.
 */
export function scopeParams(scope: ConnectionScope): ConnectionScope {
  return { organizationId: scope.organizationId, connectionId: scope.connectionId, test: scope.test };
}
