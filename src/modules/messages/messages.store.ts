import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { scopeParams, visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { MessagesTable } from '../../db/schema.ts';

export interface MessageFilters {
  conversationId?: string | undefined;
  contactId?: string | undefined;
  connectionId?: string | undefined;
  direction?: string | undefined;
  status?: string | undefined;
}

/** The messages the scope may see: every read of the API starts here. */
const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('messages').selectAll('messages'), 'messages', scope);

// Every query compiled once per shape (db/compiled-query.ts): sends, the worker's deliveries,
// statuses and the conversations' `expand` run them all the time.
const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('messages.id', '=', p.id));
interface ListParams {
  scope: ConnectionScope;
  conversationId: string | undefined;
  contactId: string | undefined;
  connectionId: string | undefined;
  direction: string | undefined;
  status: string | undefined;
}
const listPage = compiledPaging(
  (db, p: ListParams) => {
    let query = visible(db, p.scope);
    if (p.conversationId !== undefined) query = query.where('messages.conversation_id', '=', p.conversationId);
    if (p.contactId !== undefined) query = query.where('messages.contact_id', '=', p.contactId);
    if (p.connectionId !== undefined) query = query.where('messages.connection_id', '=', p.connectionId);
    if (p.direction !== undefined) query = query.where('messages.direction', '=', p.direction);
    if (p.status !== undefined) query = query.where('messages.status', '=', p.status);
    return query;
  },
  { id: 'messages.id', createdAt: 'messages.created_at' },
);
// Driven by the conversations: per conversation its key, the newest message id from the index
// (conversation_id, id), then that message by key. Driven by the messages instead
// (`conversation_id in (...) and id = (select max(id) ...)`), the query visited every message of
// each conversation: 15 ms for a page of conversations a thousand messages long, against 50 µs.
const lastOf = compileOnce((db, p: { conversationIds: readonly string[] }) =>
  db
    .selectFrom('conversations as c')
    .innerJoin('messages as m', (join) =>
      join.on((eb) =>
        eb(
          'm.id',
          '=',
          eb
            .selectFrom('messages as n')
            .select((inner) => inner.fn.max('n.id').as('id'))
            .whereRef('n.conversation_id', '=', 'c.id'),
        ),
      ),
    )
    .selectAll('m')
    .where('c.id', 'in', p.conversationIds),
);
const byProviderId = compileOnce((db, p: { connectionId: string; providerMessageId: string }) =>
  db.selectFrom('messages').selectAll().where('connection_id', '=', p.connectionId).where('provider_message_id', '=', p.providerMessageId),
);
const insertIfAbsent = compileOnce((db, row: MessagesTable) =>
  db
    .insertInto('messages')
    .values(row)
    .onConflict((conflict) => conflict.columns(['connection_id', 'provider_message_id']).doNothing()),
);
const byId = compileOnce((db, p: { id: string }) => db.selectFrom('messages').selectAll().where('id', '=', p.id));
const insertRow = compileOnce((db, row: MessagesTable) => db.insertInto('messages').values(row));
const recordProviderId = compileOnce((db, p: { id: string; providerMessageId: string }) =>
  db.updateTable('messages').set({ provider_message_id: p.providerMessageId }).where('id', '=', p.id).where('provider_message_id', 'is', null),
);
const markAccepted = compileOnce((db, p: { id: string; changes: Pick<MessagesTable, 'sent_at' | 'updated_at'> }) =>
  db.updateTable('messages').set(p.changes).where('id', '=', p.id).where('sent_at', 'is', null),
);
const advanceStatus = compileOnce((db, p: { id: string; from: readonly string[]; changes: Pick<MessagesTable, 'status' | 'error' | 'updated_at'> }) =>
  db.updateTable('messages').set(p.changes).where('id', '=', p.id).where('status', 'in', p.from),
);

export function createMessagesStore() {
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<MessagesTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
    },
    list(db: Db, scope: ConnectionScope, filters: MessageFilters, page: PageRequest) {
      const { conversationId, contactId, connectionId, direction, status } = filters;
      return listPage(db, { scope: scopeParams(scope), conversationId, contactId, connectionId, direction, status }, page);
    },
    /** The newest message of each conversation, in one query (one index probe per conversation). */
    lastOfConversations(db: Db, conversationIds: readonly string[]): Promise<MessagesTable[]> {
      if (conversationIds.length === 0) return Promise.resolve([]);
      return lastOf.all(db, { conversationIds });
    },
    findByProviderId(db: Db, connectionId: string, providerMessageId: string): Promise<MessagesTable | undefined> {
      return byProviderId.first(db, { connectionId, providerMessageId });
    },
    /** Inserts unless the provider's id is already stored for the number; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: MessagesTable): Promise<boolean> {
      return (await insertIfAbsent.run(db, row)) > 0;
    },
    /** Any message by id, for the service's own queued work (which has no caller to scope by). */
    findById(db: Db, id: string): Promise<MessagesTable | undefined> {
      return byId.first(db, { id });
    },
    async insert(db: Db, row: MessagesTable): Promise<void> {
      await insertRow.run(db, row);
    },
    /**
     * Records the provider's id the first time it is learnt: from the answer to the send, or from a
     * status that overtook that answer (it carries our id as callback data).
     */
    async recordProviderId(db: Db, id: string, providerMessageId: string): Promise<void> {
      await recordProviderId.run(db, { id, providerMessageId });
    },
    /** Marks an outbound message accepted by the provider, once: answers whether this call did it. */
    async markAccepted(db: Db, id: string, changes: Pick<MessagesTable, 'sent_at' | 'updated_at'>): Promise<boolean> {
      return (await markAccepted.run(db, { id, changes: { sent_at: changes.sent_at, updated_at: changes.updated_at } })) > 0;
    },
    /**
     * Moves a message to a status only from one of `from`, in one statement: two statuses applied at
     * once cannot both read the old status and overwrite each other. Answers whether it moved.
     */
    async advanceStatus(db: Db, id: string, from: readonly string[], changes: Pick<MessagesTable, 'status' | 'error' | 'updated_at'>): Promise<boolean> {
      const { status, error, updated_at } = changes;
      return (await advanceStatus.run(db, { id, from, changes: { status, error, updated_at } })) > 0;
    },
  };
}

export type MessagesStore = ReturnType<typeof createMessagesStore>;
