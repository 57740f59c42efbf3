/**
 * Conversation locks: a lease one member holds on a conversation so that two people do not answer
 * the same customer at once. Owns the /v1/conversations/{id}/lock endpoints (acquire or renew,
 * release, transfer, request a handover), the timers that end a lease at its TTL or when its holder
 * goes idle, the `conversation.lock_changed` and `conversation.lock_requested` events, and the check
 * the send pipeline makes (`assertMaySend`) so that nobody but the holder writes into a locked one.
 */
import type { ConversationsService } from '../conversations/index.ts';
import type { MembersService } from '../members/index.ts';
import type { Module } from '../module.ts';
import { conversationLocksJobs } from './conversation-locks.job.ts';
import { registerConversationLocksRoutes } from './conversation-locks.routes.ts';
import { createConversationLocksService, type ConversationLocksService, type ConversationLocksServiceDeps } from './conversation-locks.service.ts';
import { createConversationLocksStore } from './conversation-locks.store.ts';

/** A lease on a conversation that a merge folds away ends with it, and so do the leases of a member who leaves. */
export function createConversationLocksModule(
  deps: Omit<ConversationLocksServiceDeps, 'store' | 'conversations' | 'members'> & {
    conversations: Pick<ConversationsService, 'getForReference' | 'onFold'>;
    members: Pick<MembersService, 'find' | 'onRemoved'>;
  },
): Module<ConversationLocksService> {
  const service = createConversationLocksService({ ...deps, store: createConversationLocksStore() });
  deps.conversations.onFold((trx, from) => service.endWithConversation(trx, from));
  deps.members.onRemoved((trx, member) => service.releaseAllOf(trx, member.id, member.organization_id));
  return {
    name: 'conversation-locks',
    service,
    routes: (server) => registerConversationLocksRoutes(server, service),
    jobs: conversationLocksJobs(service),
  };
}

export type { ConversationLocksService } from './conversation-locks.service.ts';
export type { ConversationLock } from './conversation-locks.schemas.ts';
