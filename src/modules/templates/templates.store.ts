import type { Db } from '../../db/connect.ts';
import type { TemplatesTable } from '../../db/schema.ts';

export function createTemplatesStore() {
  return {
    listForConnection(db: Db, connectionId: string): Promise<TemplatesTable[]> {
      return db.selectFrom('templates').selectAll().where('connection_id', '=', connectionId).execute();
    },
    findByProviderId(db: Db, connectionId: string, providerTemplateId: string): Promise<TemplatesTable | undefined> {
      return db.selectFrom('templates').selectAll().where('connection_id', '=', connectionId).where('provider_template_id', '=', providerTemplateId).executeTakeFirst();
    },
    async insert(db: Db, row: TemplatesTable): Promise<void> {
      await db.insertInto('templates').values(row).execute();
    },
    async update(db: Db, id: string, changes: Partial<Omit<TemplatesTable, 'id' | 'organization_id' | 'connection_id' | 'created_at'>>): Promise<void> {
      await db.updateTable('templates').set(changes).where('id', '=', id).execute();
    },
  };
}

export type TemplatesStore = ReturnType<typeof createTemplatesStore>;
