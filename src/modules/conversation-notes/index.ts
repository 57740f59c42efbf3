/**
 * Conversation notes: what a team writes on a conversation for itself (`note_…`), listed with the
 * conversation and never sent to the provider. A note is visible when its conversation is, and
 * follows it when a contact merge folds that conversation into another.
 */
import type { ConversationsService } from '../conversations/index.ts';
import type { Module } from '../module.ts';
import { registerConversationNotesRoutes } from './conversation-notes.routes.ts';
import { createConversationNotesService, type ConversationNotesService, type ConversationNotesServiceDeps } from './conversation-notes.service.ts';
import { createConversationNotesStore } from './conversation-notes.store.ts';

export function createConversationNotesModule(
  deps: Omit<ConversationNotesServiceDeps, 'store' | 'conversations'> & {
    conversations: ConversationNotesServiceDeps['conversations'] & Pick<ConversationsService, 'onFold'>;
  },
): Module<ConversationNotesService> {
  const service = createConversationNotesService({ ...deps, store: createConversationNotesStore() });
  deps.conversations.onFold((trx, from, to) => service.move(trx, from, to));
  return { name: 'conversation-notes', service, routes: (server) => registerConversationNotesRoutes(server, service) };
}

export type { ConversationNotesService } from './conversation-notes.service.ts';
export type { Note } from './conversation-notes.schemas.ts';
