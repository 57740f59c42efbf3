import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { OrganizationsTable } from '../../db/schema.ts';

// Compiled once (db/compiled-query.ts): every /v1 request reads its organization.
const byId = compileOnce((db, p: { id: string }) => db.selectFrom('organizations').selectAll().where('id', '=', p.id));
const lockById = compileOnce((db, p: { id: string }, dialect) => dialect.lockRows(db.selectFrom('organizations').selectAll().where('id', '=', p.id)));

export function createOrganizationsStore() {
  return {
    async insert(db: Db, row: OrganizationsTable): Promise<void> {
      await db.insertInto('organizations').values(row).execute();
    },
    find(db: Db, id: string): Promise<OrganizationsTable | undefined> {
      return byId.first(db, { id });
    },
    lock(db: Db, id: string): Promise<OrganizationsTable | undefined> {
      return lockById.first(db, { id });
    },
    async update(db: Db, id: string, changes: Partial<Omit<OrganizationsTable, 'id' | 'created_at'>>): Promise<void> {
      await db.updateTable('organizations').set(changes).where('id', '=', id).execute();
    },
  };
}

export type OrganizationsStore = ReturnType<typeof createOrganizationsStore>;
