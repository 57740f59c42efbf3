import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, Nullable, Timestamp } from '../../http/schemas.ts';

export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;
export const MESSAGE_STATUSES = ['received', 'queued', 'sent', 'delivered', 'read', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * The types a message can have. Like Stripe's `type` + object named after it, the content of a
 * message sits under the key named by its `type`, in the provider's own shape (snake_case, unknown
 * fields kept). A type the provider does not support arrives as `unsupported`.
 */
export const MESSAGE_TYPES = [
  'text', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'contacts', 'interactive', 'button',
  'reaction', 'order', 'system', 'request_welcome', 'template', 'unsupported',
] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

const Content = Type.Optional(Type.Unknown());
const contentProperties = Object.fromEntries(MESSAGE_TYPES.map((type) => [type, Content])) as Record<MessageType, typeof Content>;

export const MessageErrorSchema = Type.Object({
  code: Type.Integer({ description: "The provider's error code." }),
  title: Nullable(Type.String()),
  message: Nullable(Type.String()),
  details: Nullable(Type.String()),
});
export type MessageError = Static<typeof MessageErrorSchema>;

export const MessageSchema = Type.Object({
  id: Id('message'),
  object: Type.Literal('message'),
  connection_id: Id('connection'),
  conversation_id: Id('conversation'),
  contact_id: Id('contact'),
  direction: Type.Enum(MESSAGE_DIRECTIONS),
  type: Type.Enum(MESSAGE_TYPES),
  ...contentProperties,
  context: Nullable(Type.Object({
    reply_to: Nullable(Id('message'), { description: 'The message this one replies to, when it is known here.' }),
    reply_to_provider_message_id: Nullable(Type.String()),
    forwarded: Type.Boolean(),
    frequently_forwarded: Type.Boolean(),
  })),
  referral: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'The ad or post a customer came from (click-to-chat ads).' })),
  status: Type.Enum(MESSAGE_STATUSES),
  error: Nullable(MessageErrorSchema),
  provider_message_id: Nullable(Type.String()),
  imported: Type.Boolean({ description: 'Imported from the business app at coexistence onboarding: opened no window and triggered nothing.' }),
  metadata: Metadata,
  sent_at: Nullable(Timestamp, { description: 'When the sender sent it, as the provider reports.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Message = Static<typeof MessageSchema>;

export const MessageListQuery = ListQuery({
  conversation_id: Type.Optional(Id('conversation', "Only this conversation's messages.")),
  contact_id: Type.Optional(Id('contact', "Only the messages to and from this contact.")),
  connection_id: Type.Optional(Id('connection', "Only this connection's messages.")),
  direction: Type.Optional(Type.Enum(MESSAGE_DIRECTIONS, { description: '`inbound` (from the customer) or `outbound`.' })),
  status: Type.Optional(Type.Enum(MESSAGE_STATUSES, { description: 'Only messages with this status.' })),
});
export const MessageListSchema = ListOf(MessageSchema);
