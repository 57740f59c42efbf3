import type { Db } from '../../db/connect.ts';
import { visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { TemplatesTable } from '../../db/schema.ts';

export interface TemplateFilters {
  connectionId?: string | undefined;
  status?: string | undefined;
  name?: string | undefined;
  language?: string | undefined;
  category?: string | undefined;
}

export type TemplateChanges = Partial<Omit<TemplatesTable, 'id' | 'organization_id' | 'connection_id' | 'created_at'>>;

export function createTemplatesStore() {
  /** The templates the scope may see: every read of the API starts here. */
  const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('templates').selectAll('templates'), 'templates', scope);
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<TemplatesTable | undefined> {
      return visible(db, scope).where('templates.id', '=', id).executeTakeFirst();
    },
    list(db: Db, scope: ConnectionScope, filters: TemplateFilters, page: PageRequest) {
      let query = visible(db, scope);
      if (filters.connectionId !== undefined) query = query.where('templates.connection_id', '=', filters.connectionId);
      if (filters.status !== undefined) query = query.where('templates.status', '=', filters.status);
      if (filters.name !== undefined) query = query.where('templates.name', '=', filters.name);
      if (filters.language !== undefined) query = query.where('templates.language', '=', filters.language);
      if (filters.category !== undefined) query = query.where('templates.category', '=', filters.category);
      return paginate(query, { id: 'templates.id', createdAt: 'templates.created_at' }, page);
    },
    /** Every record of a (name, language) on a connection, newest first: deleted ones stay as history. */
    listByName(db: Db, connectionId: string, name: string, language: string): Promise<TemplatesTable[]> {
      return db
        .selectFrom('templates')
        .selectAll()
        .where('connection_id', '=', connectionId)
        .where('name', '=', name)
        .where('language', '=', language)
        .orderBy('id', 'desc')
        .execute();
    },
    listForConnection(db: Db, connectionId: string): Promise<TemplatesTable[]> {
      return db.selectFrom('templates').selectAll().where('connection_id', '=', connectionId).execute();
    },
    listApproved(db: Db, connectionId: string): Promise<Pick<TemplatesTable, 'id' | 'name' | 'language' | 'category'>[]> {
      return db
        .selectFrom('templates')
        .select(['id', 'name', 'language', 'category'])
        .where('connection_id', '=', connectionId)
        .where('status', '=', 'approved')
        .orderBy('name')
        .orderBy('language')
        .execute();
    },
    findByProviderId(db: Db, connectionId: string, providerTemplateId: string): Promise<TemplatesTable | undefined> {
      return db
        .selectFrom('templates')
        .selectAll()
        .where('connection_id', '=', connectionId)
        .where('provider_template_id', '=', providerTemplateId)
        .executeTakeFirst();
    },
    async insert(db: Db, row: TemplatesTable): Promise<void> {
      await db.insertInto('templates').values(row).execute();
    },
    async update(db: Db, id: string, changes: TemplateChanges): Promise<void> {
      await db.updateTable('templates').set(changes).where('id', '=', id).execute();
    },
  };
}

export type TemplatesStore = ReturnType<typeof createTemplatesStore>;
