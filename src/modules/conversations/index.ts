/**
 * Conversations: the thread between one connected number and one contact, which every message
 * between them belongs to, and the place where people work on it: its state, the member assigned,
 * who answers now (`control`), tags and metadata, through the /v1/conversations endpoints. Owns
 * the 24-hour customer service window of each thread (open while the customer's last message is
 * less than a day old), the `conversation.window_expiring` timer an hour before it closes, and
 * folding threads together when contacts merge. Notes are their own module (conversation-notes).
 */
import type { HttpServer } from '../../http/server.ts';
import { conversationWindowExpiring } from '../../jobs/catalog.ts';
import type { MembersService } from '../members/index.ts';
import { handleJob, type Module } from '../module.ts';
import type { ConversationRelations } from './conversation-relations.ts';
import { registerConversationsRoutes } from './conversations.routes.ts';
import { createConversationsService, type ConversationsService, type ConversationsServiceDeps } from './conversations.service.ts';
import { createConversationsStore } from './conversations.store.ts';

/**
 * Contacts and messages are built on conversations (every message files into one), yet the
 * endpoints embed them (`expand`): the endpoints join once both exist.
 */
export function createConversationsModule(deps: Omit<ConversationsServiceDeps, 'store'> & { members: Pick<MembersService, 'find' | 'onRemoved'> }) {
  const service = createConversationsService({ ...deps, store: createConversationsStore() });
  deps.members.onRemoved((trx, member) => service.unassignMember(trx, member));
  const module: Module<ConversationsService> = {
    name: 'conversations',
    service,
    jobs: [handleJob(conversationWindowExpiring, (payload) => service.warnWindowExpiring(payload.conversation_id, payload.expires_at))],
  };
  return {
    ...module,
    withEndpoints: (relations: ConversationRelations): Module<ConversationsService> => ({
      ...module,
      routes: (server: HttpServer) => registerConversationsRoutes(server, service, relations),
    }),
  };
}

export type { ConversationsService, FoldListener, Window } from './conversations.service.ts';
export type { ConversationRelations } from './conversation-relations.ts';
export { WINDOW_MS, WINDOW_WARNING_MS } from './conversations.service.ts';
export type { Conversation, ConversationControl } from './conversations.schemas.ts';
