import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ConversationNotesTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Principal } from '../credentials/principal.ts';
import type { CredentialKind } from '../credentials/scopes.schemas.ts';
import type { CreateNoteInput, Note } from './conversation-notes.schemas.ts';
import type { ConversationNotesStore } from './conversation-notes.store.ts';

function toNote(row: ConversationNotesTable): Note {
  return {
    id: row.id,
    object: 'note',
    conversation_id: row.conversation_id,
    author: { member_id: row.author_member_id, credential_kind: row.author_credential_kind as CredentialKind },
    body: row.body,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
  };
}

export interface ConversationNotesServiceDeps {
  db: Db;
  store: ConversationNotesStore;
  clock: Clock;
  conversations: Pick<ConversationsService, 'getForReference' | 'lockForReference'>;
}

export function createConversationNotesService(deps: ConversationNotesServiceDeps) {
  const { db, store, clock, conversations } = deps;
  return {
    /**
     * Notes are for the team: stored, listed, never sent to the provider, and announced by no event
     * (the catalogue has none, and `conversation.updated` is about the conversation's own fields).
     */
    async create(principal: Principal, conversationId: string, input: CreateNoteInput): Promise<Note> {
      return db.transaction().execute(async (trx) => {
        // Held, so that a merge cannot fold the conversation away between the check and the insert.
        const conversation = await conversations.lockForReference(trx, principal, conversationId);
        const now = clock.now();
        const row: ConversationNotesTable = {
          id: newId('note', now.getTime()),
          organization_id: principal.organizationId,
          conversation_id: conversation.id,
          author_member_id: principal.memberId,
          author_credential_kind: principal.kind,
          body: input.body,
          metadata: JSON.stringify(input.metadata ?? {}),
          created_at: now.toISOString(),
        };
        await store.insert(trx, row);
        return toNote(row);
      });
    },

    async list(principal: Principal, conversationId: string, page: PageRequest): Promise<Page<Note>> {
      await conversations.getForReference(db, principal, conversationId);
      return mapPage(await store.list(db, conversationId, page), toNote);
    },

    /** For a contact merge: the folded conversation's notes join the one it was folded into. */
    async move(trx: Trx, fromConversationId: string, toConversationId: string): Promise<void> {
      await store.move(trx, fromConversationId, toConversationId);
    },
  };
}

export type ConversationNotesService = ReturnType<typeof createConversationNotesService>;
