import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { ConnectorAccountsTable } from '../../db/schema.ts';

export type ConnectorAccountChanges = Partial<Omit<ConnectorAccountsTable, 'id' | 'organization_id' | 'mode' | 'created_at'>>;

/**
 * Who may see which accounts: an organization's, narrowed to one connection's for a connection key
 * and to test ones for a test key. Undefined fields do not narrow (db/compiled-query.ts).
 */
export interface ConnectorAccountScope {
  organizationId: string;
  connectionId: string | undefined;
  mode: 'test' | undefined;
}

function visible(db: Db, scope: ConnectorAccountScope) {
  let query = db.selectFrom('connector_accounts').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.connectionId !== undefined) query = query.where('connection_id', '=', scope.connectionId);
  if (scope.mode !== undefined) query = query.where('mode', '=', scope.mode);
  return query;
}

const scopeParams = (scope: ConnectorAccountScope): ConnectorAccountScope => ({
  organizationId: scope.organizationId,
  connectionId: scope.connectionId,
  mode: scope.mode,
});

const findVisible = compileOnce((db, p: { scope: ConnectorAccountScope; id: string }) => visible(db, p.scope).where('id', '=', p.id));
// A disconnect holds the row, so a step reading it for its call sees the account before or after, never half.
const lockVisible = compileOnce((db, p: { scope: ConnectorAccountScope; id: string }, dialect) =>
  dialect.lockRows(visible(db, p.scope).where('id', '=', p.id)),
);
const findOfOrganization = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('connector_accounts').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);
const insertRow = compileOnce((db, row: ConnectorAccountsTable) => db.insertInto('connector_accounts').values(row));
const updateRow = compileOnce((db, p: { id: string; changes: ConnectorAccountChanges }) =>
  db.updateTable('connector_accounts').set(p.changes).where('id', '=', p.id),
);
const listPage = compiledPaging(
  (db, p: { scope: ConnectorAccountScope; status: string | undefined; connector: string | undefined }) => {
    let query = visible(db, p.scope);
    if (p.status !== undefined) query = query.where('status', '=', p.status);
    if (p.connector !== undefined) query = query.where('connector', '=', p.connector);
    return query;
  },
  { id: 'id', createdAt: 'created_at' },
);

export function createConnectorsStore() {
  return {
    find(db: Db, scope: ConnectorAccountScope, id: string): Promise<ConnectorAccountsTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
    },
    lock(db: Db, scope: ConnectorAccountScope, id: string): Promise<ConnectorAccountsTable | undefined> {
      return lockVisible.first(db, { scope: scopeParams(scope), id });
    },
    /** An account of the organization whatever the caller's key: for runs and deploys, which check its mode themselves. */
    findOfOrganization(db: Db, organizationId: string, id: string): Promise<ConnectorAccountsTable | undefined> {
      return findOfOrganization.first(db, { organizationId, id });
    },
    async insert(db: Db, row: ConnectorAccountsTable): Promise<void> {
      await insertRow.run(db, row);
    },
    async update(db: Db, id: string, changes: ConnectorAccountChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    list(db: Db, scope: ConnectorAccountScope, filters: { status?: string | undefined; connector?: string | undefined }, page: PageRequest) {
      return listPage(db, { scope: scopeParams(scope), status: filters.status, connector: filters.connector }, page);
    },
  };
}

export type ConnectorsStore = ReturnType<typeof createConnectorsStore>;
