import type { Db } from '../../db/connect.ts';
import type { ConversationsTable } from '../../db/schema.ts';

export function createConversationsStore() {
  return {
    findThread(db: Db, connectionId: string, contactId: string): Promise<ConversationsTable | undefined> {
      return db.selectFrom('conversations').selectAll().where('connection_id', '=', connectionId).where('contact_id', '=', contactId).executeTakeFirst();
    },
    /** Inserts unless the thread exists; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ConversationsTable): Promise<boolean> {
      const result = await db.insertInto('conversations').values(row).onConflict((conflict) => conflict.columns(['connection_id', 'contact_id']).doNothing()).executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: Partial<Pick<ConversationsTable, 'state' | 'last_message_at' | 'last_inbound_at' | 'updated_at'>>): Promise<void> {
      await db.updateTable('conversations').set(changes).where('id', '=', id).execute();
    },
  };
}

export type ConversationsStore = ReturnType<typeof createConversationsStore>;
