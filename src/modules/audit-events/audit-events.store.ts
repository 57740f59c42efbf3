import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { AuditEventsTable } from '../../db/schema.ts';

export function createAuditEventsStore() {
  return {
    async insert(db: Db, row: AuditEventsTable): Promise<void> {
      await db.insertInto('audit_events').values(row).execute();
    },

    find(db: Db, organizationId: string, id: string): Promise<AuditEventsTable | undefined> {
      return db.selectFrom('audit_events').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },

    list(db: Db, organizationId: string, filters: { action?: string | undefined; targetId?: string | undefined }, page: PageRequest) {
      let query = db.selectFrom('audit_events').selectAll().where('organization_id', '=', organizationId);
      if (filters.action !== undefined) query = query.where('action', '=', filters.action);
      if (filters.targetId !== undefined) query = query.where('target_id', '=', filters.targetId);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },
  };
}

export type AuditEventsStore = ReturnType<typeof createAuditEventsStore>;
