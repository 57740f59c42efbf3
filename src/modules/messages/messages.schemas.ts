import Type, { type Static, type TProperties } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { TemplateSendSchema } from '../templates/templates.schemas.ts';

export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;
export const MESSAGE_STATUSES = ['received', 'queued', 'sent', 'delivered', 'read', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * The types a message can have. Like Stripe's `type` + object named after it, the content of a
 * message sits under the key named by its `type`, in the provider's own shape (snake_case, unknown
 * fields kept). A type the provider does not support arrives as `unsupported`.
 */
export const MESSAGE_TYPES = [
  'text',
  'image',
  'video',
  'audio',
  'document',
  'sticker',
  'location',
  'contacts',
  'interactive',
  'button',
  'reaction',
  'order',
  'system',
  'request_welcome',
  'template',
  'unsupported',
] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

const Content = Type.Optional(Type.Unknown());
const contentProperties = Object.fromEntries(MESSAGE_TYPES.map((type) => [type, Content])) as Record<MessageType, typeof Content>;

export const MessageErrorSchema = Type.Object({
  code: Nullable(Type.Integer(), { description: "The provider's error code; null when the service itself gave up (the connection was disconnected, say)." }),
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
  context: Nullable(
    Type.Object({
      reply_to: Nullable(Id('message'), { description: 'The message this one replies to, when it is known here.' }),
      reply_to_provider_message_id: Nullable(Type.String()),
      forwarded: Type.Boolean(),
      frequently_forwarded: Type.Boolean(),
    }),
  ),
  referral: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'The ad or post a customer came from (click-to-chat ads).' })),
  status: Type.Enum(MESSAGE_STATUSES),
  error: Nullable(MessageErrorSchema),
  provider_message_id: Nullable(Type.String()),
  imported: Type.Boolean({ description: 'Imported from the business app at coexistence onboarding: opened no window and triggered nothing.' }),
  echo: Type.Boolean({ description: 'Sent by the owner from the business app (coexistence), not through the API; known from its echo.' }),
  metadata: Metadata,
  sent_at: Nullable(Timestamp, { description: 'When the sender sent it, as the provider reports.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Message = Static<typeof MessageSchema>;

export const MessageListQuery = ListQuery({
  conversation_id: Type.Optional(Id('conversation', "Only this conversation's messages.")),
  contact_id: Type.Optional(Id('contact', 'Only the messages to and from this contact.')),
  connection_id: Type.Optional(Id('connection', "Only this connection's messages.")),
  direction: Type.Optional(Type.Enum(MESSAGE_DIRECTIONS, { description: '`inbound` (from the customer) or `outbound`.' })),
  status: Type.Optional(Type.Enum(MESSAGE_STATUSES, { description: 'Only messages with this status.' })),
});
export const MessageListSchema = ListOf(MessageSchema);

/*
 * Sending. The body names its `type` and carries the content under the key of that name, in the
 * shape the message is shown in afterwards (the provider's snake_case, media named by our `med_` id
 * or a link). Limits are the provider's, checked here so that a send the provider would refuse is
 * refused before it is stored.
 */

export const SENDABLE_TYPES = [
  'text',
  'image',
  'video',
  'audio',
  'document',
  'sticker',
  'location',
  'contacts',
  'interactive',
  'template',
  'reaction',
] as const;
export type SendableType = (typeof SENDABLE_TYPES)[number];

const Link = Type.String({ pattern: '^https://', maxLength: 2048, description: 'A public https URL the provider fetches the media from.' });
const MediaId = Id('media', 'One of your uploads (`POST /v1/media`).');
const Caption = Type.String({ minLength: 1, maxLength: 1024 });
const Filename = Type.String({ minLength: 1, maxLength: 240 });

const mediaContent = <T extends TProperties>(extra: T, description: string) =>
  Strict(
    { media_id: Type.Optional(MediaId), link: Type.Optional(Link), ...extra },
    { description: `${description} Exactly one of \`media_id\` and \`link\`.` },
  );

const Label = Type.Optional(Type.Enum(['home', 'work'] as const));

export const ContactCardSchema = Strict({
  name: Strict({
    formatted_name: Type.String({ minLength: 1, maxLength: 256 }),
    first_name: Type.Optional(Type.String({ maxLength: 256 })),
    last_name: Type.Optional(Type.String({ maxLength: 256 })),
    middle_name: Type.Optional(Type.String({ maxLength: 256 })),
    prefix: Type.Optional(Type.String({ maxLength: 64 })),
    suffix: Type.Optional(Type.String({ maxLength: 64 })),
  }),
  phones: Type.Optional(
    Type.Array(
      Strict({
        phone: Type.String({ minLength: 1, maxLength: 64 }),
        type: Type.Optional(Type.Enum(['cell', 'main', 'iphone', 'home', 'work'] as const)),
        wa_id: Type.Optional(Type.String({ pattern: '^[0-9]{5,20}$' })),
      }),
      { maxItems: 20 },
    ),
  ),
  emails: Type.Optional(Type.Array(Strict({ email: Type.String({ format: 'email', maxLength: 254 }), type: Label }), { maxItems: 20 })),
  addresses: Type.Optional(
    Type.Array(
      Strict({
        street: Type.Optional(Type.String({ maxLength: 512 })),
        city: Type.Optional(Type.String({ maxLength: 256 })),
        state: Type.Optional(Type.String({ maxLength: 256 })),
        zip: Type.Optional(Type.String({ maxLength: 32 })),
        country: Type.Optional(Type.String({ maxLength: 256 })),
        country_code: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2}$' })),
        type: Label,
      }),
      { maxItems: 20 },
    ),
  ),
  org: Type.Optional(
    Strict({
      company: Type.Optional(Type.String({ maxLength: 256 })),
      department: Type.Optional(Type.String({ maxLength: 256 })),
      title: Type.Optional(Type.String({ maxLength: 256 })),
    }),
  ),
  urls: Type.Optional(Type.Array(Strict({ url: Type.String({ minLength: 1, maxLength: 2048 }), type: Label }), { maxItems: 20 })),
  birthday: Type.Optional(Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' })),
});

const InteractiveText = (maxLength: number) => Strict({ text: Type.String({ minLength: 1, maxLength }) });
const HeaderMedia = mediaContent({}, 'The header media.');

export const InteractiveSchema = Type.Union([
  Strict(
    {
      type: Type.Literal('button'),
      header: Type.Optional(
        Type.Union([
          Strict({ type: Type.Literal('text'), text: Type.String({ minLength: 1, maxLength: 60 }) }),
          Strict({ type: Type.Literal('image'), image: HeaderMedia }),
          Strict({ type: Type.Literal('video'), video: HeaderMedia }),
          Strict({ type: Type.Literal('document'), document: mediaContent({ filename: Type.Optional(Filename) }, 'The header document.') }),
        ]),
      ),
      body: InteractiveText(1024),
      footer: Type.Optional(InteractiveText(60)),
      action: Strict({
        buttons: Type.Array(
          Strict({
            type: Type.Literal('reply'),
            reply: Strict({ id: Type.String({ minLength: 1, maxLength: 256 }), title: Type.String({ minLength: 1, maxLength: 20 }) }),
          }),
          { minItems: 1, maxItems: 3 },
        ),
      }),
    },
    { description: 'Up to three reply buttons; a tap comes back as an inbound `interactive` message with the button id.' },
  ),
  Strict(
    {
      type: Type.Literal('list'),
      header: Type.Optional(Strict({ type: Type.Literal('text'), text: Type.String({ minLength: 1, maxLength: 60 }) })),
      body: InteractiveText(4096),
      footer: Type.Optional(InteractiveText(60)),
      action: Strict({
        button: Type.String({ minLength: 1, maxLength: 20, description: 'The label of the button that opens the list.' }),
        sections: Type.Array(
          Strict({
            title: Type.Optional(Type.String({ minLength: 1, maxLength: 24 })),
            rows: Type.Array(
              Strict({
                id: Type.String({ minLength: 1, maxLength: 200 }),
                title: Type.String({ minLength: 1, maxLength: 24 }),
                description: Type.Optional(Type.String({ maxLength: 72 })),
              }),
              { minItems: 1, maxItems: 10 },
            ),
          }),
          { minItems: 1, maxItems: 10 },
        ),
      }),
    },
    { description: 'A menu of up to ten rows in all, across up to ten sections.' },
  ),
]);

export const ReactionSchema = Strict({
  message_id: Id('message', 'The message reacted to: one of the same conversation.'),
  emoji: Type.String({ maxLength: 16, description: 'One emoji; an empty string removes an earlier reaction.' }),
});

export const SendMessageBody = Strict({
  connection_id: Type.Optional(Id('connection', 'The number to send from. Optional with a connection key, which sends from its own.')),
  contact_id: Type.Optional(Id('contact', 'The recipient. Exactly one of `contact_id` and `to`.')),
  to: Type.Optional(Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description: 'The recipient in E.164; its contact is created on the first message.' })),
  type: Type.Enum(SENDABLE_TYPES, { description: 'Which content key the message carries.' }),
  text: Type.Optional(
    Strict({
      body: Type.String({ minLength: 1, maxLength: 4096 }),
      preview_url: Type.Optional(Type.Boolean({ description: 'Show a preview of the first URL in the text.' })),
    }),
  ),
  image: Type.Optional(mediaContent({ caption: Type.Optional(Caption) }, 'An image (JPEG or PNG).')),
  video: Type.Optional(mediaContent({ caption: Type.Optional(Caption) }, 'A video (MP4 or 3GPP).')),
  audio: Type.Optional(mediaContent({}, 'An audio file or voice note.')),
  document: Type.Optional(mediaContent({ caption: Type.Optional(Caption), filename: Type.Optional(Filename) }, 'A document.')),
  sticker: Type.Optional(mediaContent({}, 'A WebP sticker.')),
  location: Type.Optional(
    Strict({
      latitude: Type.Number({ minimum: -90, maximum: 90 }),
      longitude: Type.Number({ minimum: -180, maximum: 180 }),
      name: Type.Optional(Type.String({ maxLength: 1000 })),
      address: Type.Optional(Type.String({ maxLength: 1000 })),
    }),
  ),
  contacts: Type.Optional(Type.Array(ContactCardSchema, { minItems: 1, maxItems: 20 })),
  interactive: Type.Optional(InteractiveSchema),
  template: Type.Optional(TemplateSendSchema),
  reaction: Type.Optional(ReactionSchema),
  reply_to: Type.Optional(Id('message', 'Quote this message of the same conversation.')),
  metadata: Type.Optional(Metadata),
});
export type SendMessageInput = Static<typeof SendMessageBody>;

export const ReactBody = Strict({
  emoji: ReactionSchema.properties.emoji,
  metadata: Type.Optional(Metadata),
});
export type ReactInput = Static<typeof ReactBody>;
