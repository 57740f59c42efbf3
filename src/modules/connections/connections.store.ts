import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ConnectionsTable } from '../../db/schema.ts';

export interface ConnectionScope {
  organizationId: string;
  /** A connection key sees only its own connection. */
  connectionId?: string | null | undefined;
  /** Only connections with this `test` flag: a test key sees test connections only. */
  test?: boolean | undefined;
}

export type ConnectionChanges = Partial<Omit<ConnectionsTable, 'id' | 'organization_id' | 'created_at' | 'test'>>;

// Compiled once (db/compiled-query.ts): every send checks its connection, every job and provider
// webhook finds one.
const findRow = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('connections').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);
const byId = compileOnce((db, p: { id: string }) => db.selectFrom('connections').selectAll().where('id', '=', p.id));
const serving = compileOnce((db, p: { phoneNumberId: string }) =>
  db.selectFrom('connections').selectAll().where('phone_number_id', '=', p.phoneNumberId).where('status', '!=', 'disconnected'),
);

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
      return findRow.first(db, { organizationId, id });
    },
    /** Without a tenant: for work the service does on its own (jobs, the provider's webhooks). */
    findById(db: Db, id: string): Promise<ConnectionsTable | undefined> {
      return byId.first(db, { id });
    },
    findMany(db: Db, organizationId: string, ids: readonly string[]): Promise<ConnectionsTable[]> {
      return db.selectFrom('connections').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
    },
    /** The connection that currently serves a number: at most one is not disconnected. */
    findServing(db: Db, phoneNumberId: string): Promise<ConnectionsTable | undefined> {
      return serving.first(db, { phoneNumberId });
    },
    findServingAccount(db: Db, wabaId: string): Promise<ConnectionsTable[]> {
      return db.selectFrom('connections').selectAll().where('waba_id', '=', wabaId).where('status', '!=', 'disconnected').execute();
    },
    list(db: Db, scope: ConnectionScope, filters: { status?: string | undefined }, page: PageRequest) {
      let query = scoped(db, scope);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },
    async update(db: Db, id: string, changes: ConnectionChanges): Promise<void> {
      await db.updateTable('connections').set(changes).where('id', '=', id).execute();
    },
  };
}

export type ConnectionsStore = ReturnType<typeof createConnectionsStore>;
