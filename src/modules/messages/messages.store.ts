import type { Db } from '../../db/connect.ts';
import { visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { MessagesTable } from '../../db/schema.ts';

export interface MessageFilters {
  conversationId?: string | undefined;
  contactId?: string | undefined;
  connectionId?: string | undefined;
  direction?: string | undefined;
  status?: string | undefined;
}

export function createMessagesStore() {
  /** The messages the scope may see: every read of the API starts here. */
  const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('messages').selectAll('messages'), 'messages', scope);
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<MessagesTable | undefined> {
      return visible(db, scope).where('messages.id', '=', id).executeTakeFirst();
    },
    list(db: Db, scope: ConnectionScope, filters: MessageFilters, page: PageRequest) {
      let query = visible(db, scope);
      if (filters.conversationId !== undefined) query = query.where('messages.conversation_id', '=', filters.conversationId);
      if (filters.contactId !== undefined) query = query.where('messages.contact_id', '=', filters.contactId);
      if (filters.connectionId !== undefined) query = query.where('messages.connection_id', '=', filters.connectionId);
      if (filters.direction !== undefined) query = query.where('messages.direction', '=', filters.direction);
      if (filters.status !== undefined) query = query.where('messages.status', '=', filters.status);
      return paginate(query, { id: 'messages.id', createdAt: 'messages.created_at' }, page);
    },
    /** The newest message of each conversation, in one query (an index range per conversation). */
    lastOfConversations(db: Db, conversationIds: readonly string[]): Promise<MessagesTable[]> {
      if (conversationIds.length === 0) return Promise.resolve([]);
      return db
        .selectFrom('messages as m')
        .selectAll('m')
        .where('m.conversation_id', 'in', conversationIds)
        .where('m.id', '=', (eb) =>
          eb
            .selectFrom('messages as n')
            .select((inner) => inner.fn.max('n.id').as('id'))
            .whereRef('n.conversation_id', '=', 'm.conversation_id'),
        )
        .execute();
    },
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
    /** Any message by id, for the service's own queued work (which has no caller to scope by). */
    findById(db: Db, id: string): Promise<MessagesTable | undefined> {
      return db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async insert(db: Db, row: MessagesTable): Promise<void> {
      await db.insertInto('messages').values(row).execute();
    },
    /**
     * Records the provider's id the first time it is learnt: from the answer to the send, or from a
     * status that overtook that answer (it carries our id as callback data).
     */
    async recordProviderId(db: Db, id: string, providerMessageId: string): Promise<void> {
      await db.updateTable('messages').set({ provider_message_id: providerMessageId }).where('id', '=', id).where('provider_message_id', 'is', null).execute();
    },
    /** Marks an outbound message accepted by the provider, once: answers whether this call did it. */
    async markAccepted(db: Db, id: string, changes: Pick<MessagesTable, 'sent_at' | 'updated_at'>): Promise<boolean> {
      const result = await db.updateTable('messages').set(changes).where('id', '=', id).where('sent_at', 'is', null).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
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
