import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { AuditEventsTable } from '../../db/schema.ts';

// Compiled once per shape (db/compiled-query.ts): the list is every dashboard's first page.
const insertRow = compileOnce((db, row: AuditEventsTable) => db.insertInto('audit_events').values(row));
const findRow = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('audit_events').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);
const listPage = compiledPaging(
  (db, p: { organizationId: string; action: string | undefined; targetId: string | undefined }) => {
    let query = db.selectFrom('audit_events').selectAll().where('organization_id', '=', p.organizationId);
    if (p.action !== undefined) query = query.where('action', '=', p.action);
    if (p.targetId !== undefined) query = query.where('target_id', '=', p.targetId);
    return query;
  },
  { id: 'id', createdAt: 'created_at' },
);

export function createAuditEventsStore() {
  return {
    async insert(db: Db, row: AuditEventsTable): Promise<void> {
      await insertRow.run(db, row);
    },

    find(db: Db, organizationId: string, id: string): Promise<AuditEventsTable | undefined> {
      return findRow.first(db, { organizationId, id });
    },

    list(db: Db, organizationId: string, filters: { action?: string | undefined; targetId?: string | undefined }, page: PageRequest) {
      return listPage(db, { organizationId, action: filters.action, targetId: filters.targetId }, page);
    },
  };
}

export type AuditEventsStore = ReturnType<typeof createAuditEventsStore>;
