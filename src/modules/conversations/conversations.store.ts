import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { scopeParams, visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { sql } from 'kysely';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { ConversationsTable } from '../../db/schema.ts';

export type ConversationChanges = Partial<Omit<ConversationsTable, 'id' | 'organization_id' | 'connection_id' | 'created_at'>>;

/** `created`: newest conversations first (every list's order); `recent`: latest message first. */
export type ConversationSort = 'created' | 'recent';

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

const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('conversations').selectAll('conversations'), 'conversations', scope);

// Compiled once per shape (db/compiled-query.ts): every send and inbound message records itself in
// its conversation, and the list is the inbox.
const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('conversations.id', '=', p.id));
const findThread = compileOnce((db, p: { connectionId: string; contactId: string }) =>
  db.selectFrom('conversations').selectAll().where('connection_id', '=', p.connectionId).where('contact_id', '=', p.contactId),
);
/*
 * The locking reads hold their rows until the transaction ends (`dialect.lockRows`: `for no key update`
 * on PostgreSQL; SQLite's writing transactions hold the write lock from `begin immediate`), so that
 * what is computed from a row is not overwritten by a concurrent change computed from the same old row.
 */
const lockThread = compileOnce((db, p: { connectionId: string; contactId: string }, dialect) =>
  dialect.lockRows(db.selectFrom('conversations').selectAll().where('connection_id', '=', p.connectionId).where('contact_id', '=', p.contactId)),
);
const lockById = compileOnce((db, p: { id: string }, dialect) => dialect.lockRows(db.selectFrom('conversations').selectAll().where('id', '=', p.id)));
const lockOfContacts = compileOnce((db, p: { contactIds: readonly string[] }, dialect) =>
  dialect.lockRows(db.selectFrom('conversations').selectAll().where('contact_id', 'in', p.contactIds)),
);
const lockAssignedTo = compileOnce((db, p: { organizationId: string; memberId: string }, dialect) =>
  dialect.lockRows(
    db.selectFrom('conversations').selectAll().where('organization_id', '=', p.organizationId).where('assignee_id', '=', p.memberId).orderBy('id'),
  ),
);
const findLatestInbound = compileOnce((db, p: { scope: ConnectionScope; contactId: string }) =>
  visible(db, p.scope)
    .where('conversations.contact_id', '=', p.contactId)
    .where('conversations.last_inbound_at', 'is not', null)
    .orderBy('conversations.last_inbound_at', 'desc')
    .orderBy('conversations.id', 'desc')
    .limit(1),
);
const insertIfAbsent = compileOnce((db, row: ConversationsTable) =>
  db
    .insertInto('conversations')
    .values(row)
    .onConflict((conflict) => conflict.columns(['connection_id', 'contact_id']).doNothing()),
);
const updateRow = compileOnce((db, p: { id: string; changes: ConversationChanges }) => db.updateTable('conversations').set(p.changes).where('id', '=', p.id));
interface ListParams {
  scope: ConnectionScope;
  state: string | undefined;
  assigneeId: string | null | undefined;
  connectionId: string | undefined;
  contactId: string | undefined;
  tag: string | undefined;
  /** The window's filter: whether it asks for open ones, and since when the customer must have written. */
  windowOpen: boolean | undefined;
  windowSince: string | undefined;
}
function listQuery(db: Db, p: ListParams) {
  let query = visible(db, p.scope);
  if (p.state !== undefined) query = query.where('conversations.state', '=', p.state);
  if (p.assigneeId !== undefined) query = query.where('conversations.assignee_id', p.assigneeId === null ? 'is' : '=', p.assigneeId);
  if (p.connectionId !== undefined) query = query.where('conversations.connection_id', '=', p.connectionId);
  if (p.contactId !== undefined) query = query.where('conversations.contact_id', '=', p.contactId);
  if (p.tag !== undefined) {
    const tagged = db
      .selectFrom('conversation_tags')
      .select('conversation_tags.conversation_id')
      .where('conversation_tags.organization_id', '=', p.scope.organizationId)
      .where('conversation_tags.tag', '=', p.tag);
    query = query.where('conversations.id', 'in', tagged);
  }
  const since = p.windowSince;
  if (p.windowOpen !== undefined && since !== undefined) {
    query = p.windowOpen
      ? query.where('conversations.last_inbound_at', '>', since)
      : query.where((eb) => eb.or([eb('conversations.last_inbound_at', 'is', null), eb('conversations.last_inbound_at', '<=', since)]));
  }
  return query;
}
const listPage = compiledPaging(listQuery, { id: 'conversations.id', createdAt: 'conversations.created_at' });
/**
 * `sort=recent`, the inbox's order: latest activity first. A conversation holding only imported
 * history has no `last_message_at` and takes its creation time (the index
 * `conversations_activity` serves both).
 */
const listRecentPage = compiledPaging(listQuery, {
  id: 'conversations.id',
  createdAt: 'conversations.created_at',
  key: sql<string>`coalesce(conversations.last_message_at, conversations.created_at)`,
});

export function createConversationsStore() {
  return {
    /** A conversation the scope may see. */
    find(db: Db, scope: ConnectionScope, id: string): Promise<ConversationsTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
    },
    findThread(db: Db, connectionId: string, contactId: string): Promise<ConversationsTable | undefined> {
      return findThread.first(db, { connectionId, contactId });
    },
    lockThread(db: Db, connectionId: string, contactId: string): Promise<ConversationsTable | undefined> {
      return lockThread.first(db, { connectionId, contactId });
    },
    lockById(db: Db, id: string): Promise<ConversationsTable | undefined> {
      return lockById.first(db, { id });
    },
    /** Every conversation assigned to a member, locked. */
    lockAssignedTo(db: Db, organizationId: string, memberId: string): Promise<ConversationsTable[]> {
      return lockAssignedTo.all(db, { organizationId, memberId });
    },
    /** Every conversation of these contacts, locked. */
    lockOfContacts(db: Db, contactIds: readonly string[]): Promise<ConversationsTable[]> {
      return lockOfContacts.all(db, { contactIds });
    },
    /** The contact's conversation with the latest customer message, among the connections the scope sees. */
    findLatestInbound(db: Db, contactId: string, scope: ConnectionScope): Promise<ConversationsTable | undefined> {
      return findLatestInbound.first(db, { scope: scopeParams(scope), contactId });
    },
    /** Inserts unless the thread exists; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ConversationsTable): Promise<boolean> {
      return (await insertIfAbsent.run(db, row)) > 0;
    },
    async update(db: Db, id: string, changes: ConversationChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    list(db: Db, scope: ConnectionScope, filters: ConversationFilters, page: PageRequest, sort: ConversationSort = 'created') {
      const { state, assigneeId, connectionId, contactId, tag, window } = filters;
      return (sort === 'recent' ? listRecentPage : listPage)(
        db,
        { scope: scopeParams(scope), state, assigneeId, connectionId, contactId, tag, windowOpen: window?.open, windowSince: window?.since },
        page,
      );
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
