import type { Db } from '../../db/connect.ts';
import type { MailsTable } from '../../db/schema.ts';

export function createMailStore() {
  return {
    async insert(db: Db, row: MailsTable): Promise<void> {
      await db.insertInto('mails').values(row).execute();
    },
    find(db: Db, id: string): Promise<MailsTable | undefined> {
      return db.selectFrom('mails').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async update(db: Db, id: string, changes: Partial<MailsTable>): Promise<void> {
      await db.updateTable('mails').set(changes).where('id', '=', id).execute();
    },
  };
}

export type MailStore = ReturnType<typeof createMailStore>;
