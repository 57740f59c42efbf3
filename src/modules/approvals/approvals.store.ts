import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { ConnectionScope } from '../../db/connection-scope.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { ApprovalsTable } from '../../db/schema.ts';

export type ApprovalChanges = Partial<Pick<ApprovalsTable, 'status' | 'decided_at' | 'decided_by_member_id' | 'decided_by_key_id' | 'comment' | 'updated_at'>>;

export interface ApprovalFilters {
  status?: string | undefined;
  automationId?: string | undefined;
  runId?: string | undefined;
}

/** An approval is visible as its run is: to its organization, narrowed to a connection key's connection and a test key's mode. */
const visible = (db: Db, scope: ConnectionScope) => {
  let query = db.selectFrom('approvals').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.connectionId) query = query.where('connection_id', '=', scope.connectionId);
  if (scope.test !== undefined) query = query.where('mode', '=', scope.test ? 'test' : 'live');
  return query;
};

const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('id', '=', p.id));
const findById = compileOnce((db, p: { id: string }) => db.selectFrom('approvals').selectAll().where('id', '=', p.id));
const lockById = compileOnce((db, p: { id: string }, dialect) => dialect.lockRows(db.selectFrom('approvals').selectAll().where('id', '=', p.id)));
const lockPendingOfRun = compileOnce((db, p: { runId: string }, dialect) =>
  dialect.lockRows(db.selectFrom('approvals').selectAll().where('run_id', '=', p.runId).where('status', '=', 'pending')),
);
const insertRow = compileOnce((db, row: ApprovalsTable) => db.insertInto('approvals').values(row));
const updateRow = compileOnce((db, p: { id: string; changes: ApprovalChanges }) => db.updateTable('approvals').set(p.changes).where('id', '=', p.id));
const listPage = compiledPaging(
  (db, p: { scope: ConnectionScope; filters: ApprovalFilters }) => {
    let query = visible(db, p.scope);
    if (p.filters.status !== undefined) query = query.where('status', '=', p.filters.status);
    if (p.filters.automationId !== undefined) query = query.where('automation_id', '=', p.filters.automationId);
    if (p.filters.runId !== undefined) query = query.where('run_id', '=', p.filters.runId);
    return query;
  },
  { id: 'id', createdAt: 'requested_at' },
);

export function createApprovalsStore() {
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<ApprovalsTable | undefined> {
      return findVisible.first(db, { scope, id });
    },
    findById(db: Db, id: string): Promise<ApprovalsTable | undefined> {
      return findById.first(db, { id });
    },
    /** The approval's row, held until the transaction ends (after its run's: see approval-runs.ts). */
    lockById(db: Db, id: string): Promise<ApprovalsTable | undefined> {
      return lockById.first(db, { id });
    },
    /** The run's pending approval, held (a run waits on at most one). */
    lockPendingOfRun(db: Db, runId: string): Promise<ApprovalsTable | undefined> {
      return lockPendingOfRun.first(db, { runId });
    },
    async insert(db: Db, row: ApprovalsTable): Promise<void> {
      await insertRow.run(db, row);
    },
    async update(db: Db, id: string, changes: ApprovalChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    list(db: Db, scope: ConnectionScope, filters: ApprovalFilters, page: PageRequest) {
      return listPage(db, { scope, filters }, page);
    },
  };
}

export type ApprovalsStore = ReturnType<typeof createApprovalsStore>;
