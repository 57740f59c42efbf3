/** The API types the composer and the details panel use, from the server's schemas (types only: nothing of the server is bundled). */
export type { Conversation, ConversationControl, ConversationState } from '../../../../../src/modules/conversations/conversations.schemas.ts';
export type { ConversationLock } from '../../../../../src/modules/conversation-locks/conversation-locks.schemas.ts';
export type { Note } from '../../../../../src/modules/conversation-notes/conversation-notes.schemas.ts';
export type { Contact, ContactWindow } from '../../../../../src/modules/contacts/contacts.schemas.ts';
export type { Media } from '../../../../../src/modules/media/media.schemas.ts';
export type { Message, SendMessageInput } from '../../../../../src/modules/messages/messages.schemas.ts';
export type { Template, TemplateSendInput } from '../../../../../src/modules/templates/templates.schemas.ts';
export type { Member } from '../../../../../src/modules/members/members.schemas.ts';
