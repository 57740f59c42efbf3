/**
 * The query keys every part of the dashboard agrees on, so the live stream (live/) can update or
 * invalidate what the pages show without knowing the pages.
 */
export const queryKeys = {
  connections: ['connections'] as const,
  /** Every list of conversations (any filters): `[...conversations, filters]`. */
  conversations: ['conversations'] as const,
  conversationList: (filters: object) => ['conversations', filters] as const,
  conversation: (id: string) => ['conversation', id] as const,
  /** The messages of one conversation, newest pages first. */
  messages: (conversationId: string) => ['messages', conversationId] as const,
  lock: (conversationId: string) => ['conversation-lock', conversationId] as const,
  notes: (conversationId: string) => ['conversation-notes', conversationId] as const,
  members: ['members'] as const,
  templates: (connectionId: string) => ['templates', connectionId] as const,
};
