import type { Db } from '../../db/connect.ts';
import type { MessagesTable } from '../../db/schema.ts';

export function createMessagesStore() {
  return {
    findByProviderId(db: Db, connectionId: string, providerMessageId: string): Promise<MessagesTable | undefined> {
      return db
        .selectFrom('messages')
        .selectAll()
        .where('connection_id', '=', connectionId)
        .where('provider_message_id', '=', providerMessageId)
        .executeTakeFirst();
    },
    /** Inserts unless the provider's id is already stored for the number; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: MessagesTable): Promise<boolean> {
      const result = await db
        .insertInto('messages')
        .values(row)
        .onConflict((conflict) => conflict.columns(['connection_id', 'provider_message_id']).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    /**
     * Moves a message to a status only from one of `from`, in one statement: two statuses applied at
     * once cannot both read the old status and overwrite each other. Answers whether it moved.
     */
    async advanceStatus(db: Db, id: string, from: readonly string[], changes: Pick<MessagesTable, 'status' | 'error' | 'updated_at'>): Promise<boolean> {
      const result = await db.updateTable('messages').set(changes).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
  };
}

export type MessagesStore = ReturnType<typeof createMessagesStore>;
