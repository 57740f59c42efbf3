import { embedRelations } from '../../lib/relations.ts';
import type { Principal } from '../credentials/principal.ts';
import type { Conversation } from './conversations.schemas.ts';

/**
 * What `expand` embeds in a conversation, loaded by the modules that own it. Contacts and messages
 * are built on conversations, so the endpoints receive these loaders once both exist.
 */
export interface ConversationRelations {
  /** Live contacts by id, as their GET shows them. */
  contacts(principal: Principal, ids: string[]): Promise<Map<string, unknown>>;
  /** The newest message of each conversation, by conversation id. */
  lastMessages(conversationIds: string[]): Promise<Map<string, unknown>>;
}

/** Embeds the requested relations into a page of conversations with one lookup per relation. */
export function embedConversationRelations(
  principal: Principal,
  items: Conversation[],
  expand: readonly string[],
  relations: ConversationRelations,
): Promise<Conversation[]> {
  return embedRelations(items, expand, {
    contact: { key: (conversation) => conversation.contact_id, load: (ids) => relations.contacts(principal, ids) },
    last_message: { key: (conversation) => conversation.id, load: (ids) => relations.lastMessages(ids) },
  });
}
