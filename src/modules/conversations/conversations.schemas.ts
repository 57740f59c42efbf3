import Type, { type Static } from 'typebox';
import { Id, Metadata, Nullable, Timestamp } from '../../http/schemas.ts';

export const CONVERSATION_STATES = ['open', 'pending', 'closed'] as const;
export type ConversationState = (typeof CONVERSATION_STATES)[number];

export const ConversationSchema = Type.Object({
  id: Id('conversation'),
  object: Type.Literal('conversation'),
  connection_id: Id('connection'),
  contact_id: Id('contact'),
  state: Type.Enum(CONVERSATION_STATES),
  last_message_at: Nullable(Timestamp),
  last_inbound_at: Nullable(Timestamp, { description: "The customer's last message: the 24-hour window runs from it." }),
  window_expires_at: Nullable(Timestamp, {
    description: 'When the 24-hour customer service window closes (or closed, when in the past): `last_inbound_at` plus 24 hours; null before the customer first wrote.',
  }),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Conversation = Static<typeof ConversationSchema>;
