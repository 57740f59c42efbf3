import type { Db } from '../../db/connect.ts';
import { visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import type { ConversationsTable } from '../../db/schema.ts';

export type ConversationChanges = Partial<Pick<ConversationsTable, 'contact_id' | 'state' | 'last_message_at' | 'last_inbound_at' | 'metadata' | 'window_warning_for' | 'updated_at'>>;

export function createConversationsStore() {
  /**
   * Holds rows until the transaction ends (a no-op update takes the row lock on PostgreSQL; SQLite's
   * writers are serialised anyway), so that what is computed from a row is not overwritten by a
   * concurrent change computed from the same old row.
   */
  const lock = (db: Db) => db.updateTable('conversations').set((eb) => ({ updated_at: eb.ref('updated_at') }));
  return {
    /** A conversation the scope may see. */
    find(db: Db, scope: ConnectionScope, id: string): Promise<ConversationsTable | undefined> {
      return visibleThroughConnection(db.selectFrom('conversations').selectAll('conversations'), 'conversations', scope).where('conversations.id', '=', id).executeTakeFirst();
    },
    findThread(db: Db, connectionId: string, contactId: string): Promise<ConversationsTable | undefined> {
      return db.selectFrom('conversations').selectAll().where('connection_id', '=', connectionId).where('contact_id', '=', contactId).executeTakeFirst();
    },
    lockThread(db: Db, connectionId: string, contactId: string): Promise<ConversationsTable | undefined> {
      return lock(db).where('connection_id', '=', connectionId).where('contact_id', '=', contactId).returningAll().executeTakeFirst();
    },
    lockById(db: Db, id: string): Promise<ConversationsTable | undefined> {
      return lock(db).where('id', '=', id).returningAll().executeTakeFirst();
    },
    /** Every conversation of these contacts, locked. */
    lockOfContacts(db: Db, contactIds: readonly string[]): Promise<ConversationsTable[]> {
      return lock(db).where('contact_id', 'in', contactIds).returningAll().execute();
    },
    /** The contact's conversation with the latest customer message, among the connections the scope sees. */
    findLatestInbound(db: Db, contactId: string, scope: ConnectionScope): Promise<ConversationsTable | undefined> {
      const query = visibleThroughConnection(db.selectFrom('conversations').selectAll('conversations'), 'conversations', scope)
        .where('conversations.contact_id', '=', contactId).where('conversations.last_inbound_at', 'is not', null);
      return query.orderBy('conversations.last_inbound_at', 'desc').orderBy('conversations.id', 'desc').limit(1).executeTakeFirst();
    },
    /** Inserts unless the thread exists; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ConversationsTable): Promise<boolean> {
      const result = await db.insertInto('conversations').values(row).onConflict((conflict) => conflict.columns(['connection_id', 'contact_id']).doNothing()).executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: ConversationChanges): Promise<void> {
      await db.updateTable('conversations').set(changes).where('id', '=', id).execute();
    },
    async delete(db: Db, id: string): Promise<void> {
      await db.deleteFrom('conversations').where('id', '=', id).execute();
    },
    /**
     * Files a conversation's messages under another conversation and contact (a contact merge). The
     * messages module owns the rows; this is the one write to them from here, kept to the two keys a
     * merge changes. Answers how many moved.
     */
    async moveMessages(db: Db, fromConversationId: string, to: { conversationId: string; contactId: string }): Promise<number> {
      const result = await db
        .updateTable('messages')
        .set({ conversation_id: to.conversationId, contact_id: to.contactId })
        .where('conversation_id', '=', fromConversationId)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
  };
}

export type ConversationsStore = ReturnType<typeof createConversationsStore>;
