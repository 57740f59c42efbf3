import type { Db } from '../../db/connect.ts';
import { visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ConversationsTable } from '../../db/schema.ts';

export type ConversationChanges = Partial<Omit<ConversationsTable, 'id' | 'organization_id' | 'connection_id' | 'created_at'>>;

export interface ConversationFilters {
  state?: string | undefined;
  /** A member id, or null for the unassigned ones. */
  assigneeId?: string | null | undefined;
  tag?: string | undefined;
  connectionId?: string | undefined;
  contactId?: string | undefined;
  /** Whether the customer wrote after `since` (the window is open) or not (closed). */
  window?: { open: boolean; since: string } | undefined;
}

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
      return visibleThroughConnection(db.selectFrom('conversations').selectAll('conversations'), 'conversations', scope)
        .where('conversations.id', '=', id)
        .executeTakeFirst();
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
        .where('conversations.contact_id', '=', contactId)
        .where('conversations.last_inbound_at', 'is not', null);
      return query.orderBy('conversations.last_inbound_at', 'desc').orderBy('conversations.id', 'desc').limit(1).executeTakeFirst();
    },
    /** Inserts unless the thread exists; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ConversationsTable): Promise<boolean> {
      const result = await db
        .insertInto('conversations')
        .values(row)
        .onConflict((conflict) => conflict.columns(['connection_id', 'contact_id']).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: ConversationChanges): Promise<void> {
      await db.updateTable('conversations').set(changes).where('id', '=', id).execute();
    },
    list(db: Db, scope: ConnectionScope, filters: ConversationFilters, page: PageRequest) {
      let query = visibleThroughConnection(db.selectFrom('conversations').selectAll('conversations'), 'conversations', scope);
      if (filters.state !== undefined) query = query.where('conversations.state', '=', filters.state);
      if (filters.assigneeId !== undefined) query = query.where('conversations.assignee_id', filters.assigneeId === null ? 'is' : '=', filters.assigneeId);
      if (filters.connectionId !== undefined) query = query.where('conversations.connection_id', '=', filters.connectionId);
      if (filters.contactId !== undefined) query = query.where('conversations.contact_id', '=', filters.contactId);
      if (filters.tag !== undefined) {
        const tagged = db
          .selectFrom('conversation_tags')
          .select('conversation_tags.conversation_id')
          .where('conversation_tags.organization_id', '=', scope.organizationId)
          .where('conversation_tags.tag', '=', filters.tag);
        query = query.where('conversations.id', 'in', tagged);
      }
      const window = filters.window;
      if (window !== undefined) {
        query = window.open
          ? query.where('conversations.last_inbound_at', '>', window.since)
          : query.where((eb) => eb.or([eb('conversations.last_inbound_at', 'is', null), eb('conversations.last_inbound_at', '<=', window.since)]));
      }
      return paginate(query, { id: 'conversations.id', createdAt: 'conversations.created_at' }, page);
    },
    async addTags(db: Db, organizationId: string, conversationId: string, tags: readonly string[]): Promise<void> {
      if (tags.length === 0) return;
      await db
        .insertInto('conversation_tags')
        .values(tags.map((tag) => ({ conversation_id: conversationId, tag, organization_id: organizationId })))
        .onConflict((conflict) => conflict.columns(['conversation_id', 'tag']).doNothing())
        .execute();
    },
    async removeTag(db: Db, conversationId: string, tag: string): Promise<void> {
      await db.deleteFrom('conversation_tags').where('conversation_id', '=', conversationId).where('tag', '=', tag).execute();
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
