import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ConnectionsTable } from '../../db/schema.ts';

export interface ConnectionScope {
  organizationId: string;
  /** A connection key sees only its own connection. */
  connectionId?: string | null | undefined;
  /** An API key sees only connections of its own mode. */
  test?: boolean | undefined;
}

export function createConnectionsStore() {
  const scoped = (db: Db, scope: ConnectionScope) => {
    let query = db.selectFrom('connections').selectAll().where('organization_id', '=', scope.organizationId);
    if (scope.connectionId) query = query.where('id', '=', scope.connectionId);
    if (scope.test !== undefined) query = query.where('test', '=', scope.test ? 1 : 0);
    return query;
  };
  return {
    async insert(db: Db, row: ConnectionsTable): Promise<void> {
      await db.insertInto('connections').values(row).execute();
    },
    find(db: Db, organizationId: string, id: string): Promise<ConnectionsTable | undefined> {
      return db.selectFrom('connections').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
    findMany(db: Db, organizationId: string, ids: readonly string[]): Promise<ConnectionsTable[]> {
      return db.selectFrom('connections').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
    },
    list(db: Db, scope: ConnectionScope, filters: { status?: string | undefined }, page: PageRequest) {
      let query = scoped(db, scope);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },
    async update(db: Db, organizationId: string, id: string, changes: Partial<Pick<ConnectionsTable, 'name' | 'metadata' | 'status' | 'updated_at'>>): Promise<void> {
      await db.updateTable('connections').set(changes).where('organization_id', '=', organizationId).where('id', '=', id).execute();
    },
  };
}

export type ConnectionsStore = ReturnType<typeof createConnectionsStore>;
