/** The inbox's API types, from the server's schemas. */
export type { Conversation } from '../../../../src/modules/conversations/conversations.schemas.ts';
export type { Message } from '../../../../src/modules/messages/messages.schemas.ts';
