/**
 * Conversations: the thread between one connected number and one contact, which every message
 * between them belongs to. The /v1/conversations endpoints arrive with the conversations issue.
 */
import type { Clock } from '../../lib/clock.ts';
import type { EventEmitter } from '../../events/emit.ts';
import { createConversationsService } from './conversations.service.ts';
import { createConversationsStore } from './conversations.store.ts';

export function createConversationsModule(deps: { clock: Clock; events: EventEmitter }) {
  return { service: createConversationsService({ ...deps, store: createConversationsStore() }) };
}

export type { ConversationsService } from './conversations.service.ts';
export type { Conversation } from './conversations.schemas.ts';
