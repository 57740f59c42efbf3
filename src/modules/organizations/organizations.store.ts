import type { Db } from '../../db/connect.ts';
import type { OrganizationsTable } from '../../db/schema.ts';

export function createOrganizationsStore() {
  return {
    async insert(db: Db, row: OrganizationsTable): Promise<void> {
      await db.insertInto('organizations').values(row).execute();
    },
    find(db: Db, id: string): Promise<OrganizationsTable | undefined> {
      return db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
    },
  };
}

export type OrganizationsStore = ReturnType<typeof createOrganizationsStore>;
