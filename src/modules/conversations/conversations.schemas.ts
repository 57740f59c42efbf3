import Type, { type Static } from 'typebox';
import { ExpandParameter, Id, ListOf, ListQuery, Metadata, MetadataPatch, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { ContactSchema } from '../contacts/contacts.schemas.ts';
import { MessageSchema } from '../messages/messages.schemas.ts';
import { MAX_TAGS, TAG_PATTERN } from './tags.schemas.ts';

export const CONVERSATION_STATES = ['open', 'pending', 'closed'] as const;
export type ConversationState = (typeof CONVERSATION_STATES)[number];

/** Who answers the customer now (docs/conversations.md#control). */
export const CONVERSATION_CONTROLS = ['api', 'automation', 'agent', 'app'] as const;
export type ConversationControl = (typeof CONVERSATION_CONTROLS)[number];

export const CONVERSATION_RELATIONS = ['contact', 'last_message'] as const;

export { MAX_TAGS, TAG_PATTERN };

const Tag = Type.String({ pattern: TAG_PATTERN, maxLength: 50, description: '1 to 50 characters: lowercase letters, digits, `-`, `_` and `:`.' });

export const ConversationSchema = Type.Object({
  id: Id('conversation'),
  object: Type.Literal('conversation'),
  connection_id: Id('connection'),
  contact_id: Id('contact'),
  state: Type.Enum(CONVERSATION_STATES, { description: '`open`, `pending` or `closed`; a new customer message reopens a pending or closed one.' }),
  assignee_id: Nullable(Id('member'), { description: 'The member the conversation is assigned to; null when unassigned.' }),
  control: Type.Enum(CONVERSATION_CONTROLS, {
    description:
      'Who answers now: `api` (your integration, the default), `automation`, `agent` (a person in an inbox) or `app` (the owner, from the business app).',
  }),
  tags: Type.Array(Type.String(), { description: `Your labels, sorted; at most ${MAX_TAGS}.` }),
  last_message_at: Nullable(Timestamp),
  last_inbound_at: Nullable(Timestamp, { description: "The customer's last message: the 24-hour window runs from it." }),
  window_expires_at: Nullable(Timestamp, {
    description:
      'When the 24-hour customer service window closes (or closed, when in the past): `last_inbound_at` plus 24 hours; null before the customer first wrote.',
  }),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
  contact: Type.Optional(Nullable(ContactSchema, { description: 'With `expand=contact`: the contact; null once it was deleted.' })),
  last_message: Type.Optional(Nullable(MessageSchema, { description: 'With `expand=last_message`: the newest message of the conversation.' })),
});
export type Conversation = Static<typeof ConversationSchema>;

export const ConversationListQuery = ListQuery({
  state: Type.Optional(Type.Enum(CONVERSATION_STATES)),
  assignee: Type.Optional(Type.Union([Id('member'), Type.Literal('none')], { description: 'A member id, or `none` for the unassigned ones.' })),
  tag: Type.Optional(Tag),
  connection_id: Type.Optional(Id('connection')),
  contact_id: Type.Optional(Id('contact')),
  window: Type.Optional(Type.Enum(['open', 'closed'] as const, { description: 'Whether the 24-hour customer service window is open now.' })),
  sort: Type.Optional(
    Type.Enum(['created', 'recent'] as const, {
      description:
        '`created` (the default): newest conversations first, like every list. `recent`: latest message first, as an inbox shows them (`order=asc` reverses either); the cursors are conversation ids in both.',
    }),
  ),
  expand: ExpandParameter(CONVERSATION_RELATIONS),
});
export type ConversationListInput = Static<typeof ConversationListQuery>;
export const ConversationListSchema = ListOf(ConversationSchema);

export const ConversationGetQuery = Strict({ expand: ExpandParameter(CONVERSATION_RELATIONS) });

export const UpdateConversationBody = Strict({
  state: Type.Optional(Type.Enum(CONVERSATION_STATES)),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateConversationInput = Static<typeof UpdateConversationBody>;

export const AssignConversationBody = Strict({
  member_id: Nullable(Id('member'), { description: 'An active member of the organization, or null to unassign.' }),
});
export type AssignConversationInput = Static<typeof AssignConversationBody>;

export const ControlConversationBody = Strict({ control: Type.Enum(CONVERSATION_CONTROLS) });
export type ControlConversationInput = Static<typeof ControlConversationBody>;

export const AddTagsBody = Strict({
  tags: Type.Array(Tag, {
    minItems: 1,
    maxItems: MAX_TAGS,
    uniqueItems: true,
    description: `Added to the conversation's tags; tags it has already are kept once. At most ${MAX_TAGS} in all.`,
  }),
});
export type AddTagsInput = Static<typeof AddTagsBody>;

export const TagPath = Type.Object({ id: Id('conversation'), tag: Tag }, { additionalProperties: false });
