/**
 * Conversation notes: what a team writes on a conversation for itself (`note_…`), listed with the
 * conversation and never sent to the provider. A note is visible when its conversation is, and
 * follows it when a contact merge folds that conversation into another.
 */
import type { HttpServer } from '../../http/server.ts';
import { registerConversationNotesRoutes } from './conversation-notes.routes.ts';
import { createConversationNotesService, type ConversationNotesServiceDeps } from './conversation-notes.service.ts';
import { createConversationNotesStore } from './conversation-notes.store.ts';

export function createConversationNotesModule(deps: Omit<ConversationNotesServiceDeps, 'store'>) {
  const service = createConversationNotesService({ ...deps, store: createConversationNotesStore() });
  return { service, registerRoutes: (app: HttpServer) => registerConversationNotesRoutes(app, service) };
}

export type { ConversationNotesService } from './conversation-notes.service.ts';
export type { Note } from './conversation-notes.schemas.ts';
