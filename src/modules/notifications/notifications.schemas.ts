import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { TemplateParametersSchema, TemplateReferenceProperties } from '../templates/templates.schemas.ts';
import { MAX_RECIPIENTS, PhoneNumber } from './notification-target.schemas.ts';

export const NOTIFICATION_STATUSES = ['scheduled', 'queued', 'sending', 'sent', 'delivered', 'failed', 'expired', 'canceled'] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

export const TEMPLATE_CATEGORIES = ['authentication', 'utility', 'marketing'] as const;

const NotificationTemplateSchema = Type.Object(
  {
    id: Id('template'),
    name: Type.String(),
    language: Type.String(),
    category: Nullable(Type.String({ description: '`authentication`, `utility` or `marketing`: it sets the default expiry.' })),
    // As given (checked against TemplateParametersSchema at creation); a schema of unions would make
    // the response serializer merge discriminated branches it cannot.
    parameters: Type.Object(
      { header: Type.Optional(Type.Unknown()), body: Type.Optional(Type.Unknown()), buttons: Type.Optional(Type.Unknown()) },
      { description: "The values of the template's placeholders, as given." },
    ),
  },
  { description: 'The template as it was when the notification was created.' },
);

const NotificationErrorSchema = Type.Object({
  code: Type.String({ description: "One of the API's error codes, or the provider's own code for a refusal after sending." }),
  message: Type.String(),
});

export const NotificationSchema = Type.Object(
  {
    id: Id('notification'),
    object: Type.Literal('notification'),
    connection_id: Id('connection'),
    contact_id: Nullable(Id('contact'), { description: 'Null until the message is created, for a recipient named by number without a contact.' }),
    to: Type.String({ description: 'The recipient in E.164.' }),
    template: NotificationTemplateSchema,
    status: Type.Enum(NOTIFICATION_STATUSES, {
      description: '`scheduled` → `queued` → `sending` → `sent` → `delivered`; ends `delivered`, `failed`, `expired` or `canceled`.',
    }),
    send_at: Timestamp,
    expires_at: Type.String({ format: 'date-time', description: 'Not sent after this: it ends `expired` instead.' }),
    batch_id: Nullable(Id('notificationBatch')),
    dedupe_key: Nullable(Type.String()),
    schedule_id: Nullable(Id('schedule')),
    occurrence_id: Nullable(Type.String({ description: 'The schedule occurrence (`occ_…`) that created it.' })),
    message_id: Nullable(Id('message', 'The message sent for it, in its conversation; created when it is first sent.')),
    attempts: Type.Integer({ description: 'Times it was handed to the provider (or tried to be).' }),
    error: Nullable(NotificationErrorSchema),
    replay_of: Nullable(Id('notification')),
    replayed_by: Nullable(Id('notification')),
    sent_at: Nullable(Timestamp),
    delivered_at: Nullable(Timestamp),
    failed_at: Nullable(Timestamp),
    expired_at: Nullable(Timestamp),
    canceled_at: Nullable(Timestamp),
    metadata: Metadata,
    created_at: Timestamp,
  },
  { description: 'A template message that must arrive on time or not at all.' },
);
export type Notification = Static<typeof NotificationSchema>;

const SendAt = Type.String({ format: 'date-time', description: 'When to send; default now. At most 35 days ahead.' });
const ExpiresAt = Type.String({
  format: 'date-time',
  description: "30 s to 30 days after `send_at`; default by the template's category: authentication 10 min, utility 12 h, marketing 24 h.",
});
const DedupeKey = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Your own key: a second notification with it within 24 hours answers the first (200) instead.',
});

export const CreateNotificationBody = Strict({
  connection_id: Type.Optional(Id('connection', 'The sending number; required unless a connection key sends.')),
  contact_id: Type.Optional(Id('contact', 'The recipient. Exactly one of `contact_id` and `to`.')),
  to: Type.Optional(PhoneNumber),
  template: Strict(
    { ...TemplateReferenceProperties, parameters: Type.Optional(TemplateParametersSchema) },
    { description: 'Exactly one of `id`, or `name` with `language`: an approved template of the connection, and its parameters.' },
  ),
  send_at: Type.Optional(SendAt),
  expires_at: Type.Optional(ExpiresAt),
  dedupe_key: Type.Optional(DedupeKey),
  metadata: Type.Optional(Metadata),
});
export type CreateNotificationInput = Static<typeof CreateNotificationBody>;

export const BATCH_ATOMICITY = ['all_or_nothing', 'partial'] as const;

export const CreateBatchBody = Strict({
  connection_id: Type.Optional(Id('connection', 'The sending number; required unless a connection key sends.')),
  template: Strict(TemplateReferenceProperties, { description: 'Exactly one of `id`, or `name` with `language`: one template for every recipient.' }),
  recipients: Type.Array(
    Strict({
      contact_id: Type.Optional(Id('contact', 'Exactly one of `contact_id` and `to`.')),
      to: Type.Optional(PhoneNumber),
      parameters: Type.Optional(TemplateParametersSchema),
      dedupe_key: Type.Optional(DedupeKey),
      metadata: Type.Optional(Metadata),
    }),
    { minItems: 1, maxItems: MAX_RECIPIENTS, description: `Up to ${MAX_RECIPIENTS}, each with its own parameters.` },
  ),
  mode: Type.Optional(
    Type.Enum(BATCH_ATOMICITY, {
      default: 'all_or_nothing',
      description:
        '`all_or_nothing`: one bad recipient refuses the batch (400, up to 10 details). `partial`: the good ones are created, the bad ones listed in `errors`.',
    }),
  ),
  send_at: Type.Optional(SendAt),
  expires_at: Type.Optional(ExpiresAt),
  metadata: Type.Optional(Metadata),
});
export type CreateBatchInput = Static<typeof CreateBatchBody>;

const STATUS_COUNTS = Type.Object(
  Object.fromEntries(NOTIFICATION_STATUSES.map((status) => [status, Type.Integer()])) as Record<NotificationStatus, Type.TInteger>,
  {
    description: "How many of the batch's notifications are in each status now.",
  },
);

export const NotificationBatchSchema = Type.Object({
  id: Id('notificationBatch'),
  object: Type.Literal('notification_batch'),
  connection_id: Id('connection'),
  template: Type.Object({ id: Id('template'), name: Type.String(), language: Type.String(), category: Nullable(Type.String()) }),
  mode: Type.Enum(BATCH_ATOMICITY),
  recipient_count: Type.Integer({ description: 'Recipients in the request.' }),
  notification_ids: Type.Array(Id('notification'), { description: 'The notifications created, in the order of their recipients.' }),
  errors: Type.Array(
    Type.Object({
      index: Type.Integer({ description: "The recipient's position in the request." }),
      code: Type.String(),
      message: Type.String(),
      param: Nullable(Type.String()),
    }),
    { description: '`partial` batches: the recipients refused, and why.' },
  ),
  counts: STATUS_COUNTS,
  send_at: Timestamp,
  expires_at: Timestamp,
  schedule_id: Nullable(Id('schedule')),
  occurrence_id: Nullable(Type.String()),
  metadata: Metadata,
  created_at: Timestamp,
});
export type NotificationBatch = Static<typeof NotificationBatchSchema>;

export const ReplayBody = Strict({ send_at: Type.Optional(SendAt), expires_at: Type.Optional(ExpiresAt) });
export type ReplayInput = Static<typeof ReplayBody>;

export const NotificationListQuery = ListQuery({
  status: Type.Optional(Type.Enum(NOTIFICATION_STATUSES, { description: 'Only notifications in this status.' })),
  batch_id: Type.Optional(Id('notificationBatch', "Only this batch's notifications.")),
  schedule_id: Type.Optional(Id('schedule', "Only this schedule's notifications.")),
  connection_id: Type.Optional(Id('connection', "Only this connection's notifications.")),
  contact_id: Type.Optional(Id('contact', "Only this contact's notifications.")),
  template_id: Type.Optional(Id('template', 'Only notifications of this template.')),
});
export type NotificationFilters = Omit<Static<typeof NotificationListQuery>, 'limit' | 'after' | 'before' | 'created_after' | 'created_before' | 'order'>;
export const NotificationListSchema = ListOf(NotificationSchema);
