import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { scopeParams, visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
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

/** The templates the scope may see: every read of the API starts here. */
const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('templates').selectAll('templates'), 'templates', scope);

// Compiled once (db/compiled-query.ts): a template send reads its template, a refused send the approved list.
const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('templates.id', '=', p.id));
const byName = compileOnce((db, p: { connectionId: string; name: string; language: string }) =>
  db
    .selectFrom('templates')
    .selectAll()
    .where('connection_id', '=', p.connectionId)
    .where('name', '=', p.name)
    .where('language', '=', p.language)
    .orderBy('id', 'desc'),
);
const categoryById = compileOnce((db, p: { id: string }) => db.selectFrom('templates').select('category').where('id', '=', p.id));
const approved = compileOnce((db, p: { connectionId: string }) =>
  db
    .selectFrom('templates')
    .select(['id', 'name', 'language', 'category'])
    .where('connection_id', '=', p.connectionId)
    .where('status', '=', 'approved')
    .orderBy('name')
    .orderBy('language'),
);

export function createTemplatesStore() {
  return {
    async categoryOf(db: Db, id: string): Promise<string | null | undefined> {
      return (await categoryById.first(db, { id }))?.category;
    },
    find(db: Db, scope: ConnectionScope, id: string): Promise<TemplatesTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
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
      return byName.all(db, { connectionId, name, language });
    },
    listForConnection(db: Db, connectionId: string): Promise<TemplatesTable[]> {
      return db.selectFrom('templates').selectAll().where('connection_id', '=', connectionId).execute();
    },
    listApproved(db: Db, connectionId: string): Promise<Pick<TemplatesTable, 'id' | 'name' | 'language' | 'category'>[]> {
      return approved.all(db, { connectionId });
    },
    /**
     * The (name, language) pairs among `names` approved on the connection, or without one on any
     * connected connection of the organization with that `test` flag.
     */
    approvedNamed(
      db: Db,
      owner: { organizationId: string; connectionId: string | null; test: boolean },
      names: readonly string[],
    ): Promise<Pick<TemplatesTable, 'name' | 'language' | 'category'>[]> {
      if (names.length === 0) return Promise.resolve([]);
      let query = db
        .selectFrom('templates')
        .innerJoin('connections', 'connections.id', 'templates.connection_id')
        .select(['templates.name', 'templates.language', 'templates.category'])
        .distinct()
        .where('templates.organization_id', '=', owner.organizationId)
        .where('templates.status', '=', 'approved')
        .where('templates.name', 'in', names)
        .where('connections.test', '=', owner.test ? 1 : 0)
        .where('connections.status', '!=', 'disconnected');
      if (owner.connectionId !== null) query = query.where('templates.connection_id', '=', owner.connectionId);
      return query.execute();
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
