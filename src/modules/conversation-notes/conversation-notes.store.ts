import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ConversationNotesTable } from '../../db/schema.ts';

export function createConversationNotesStore() {
  return {
    async insert(db: Db, row: ConversationNotesTable): Promise<void> {
      await db.insertInto('conversation_notes').values(row).execute();
    },
    list(db: Db, conversationId: string, page: PageRequest) {
      return paginate(
        db.selectFrom('conversation_notes').selectAll().where('conversation_id', '=', conversationId),
        { id: 'id', createdAt: 'created_at' },
        page,
      );
    },
    /** Files one conversation's notes under another (a contact merge folding the two). */
    async move(db: Db, fromConversationId: string, toConversationId: string): Promise<void> {
      await db.updateTable('conversation_notes').set({ conversation_id: toConversationId }).where('conversation_id', '=', fromConversationId).execute();
    },
  };
}

export type ConversationNotesStore = ReturnType<typeof createConversationNotesStore>;
