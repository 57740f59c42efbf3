import Type, { type Static } from 'typebox';
import { EVENT_TYPE_NAMES } from '../../events/event-types.schemas.ts';
import { Id, ListOf, ListQuery, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'The receiver: an https URL, resolved again on every delivery.' });
/** Every type, stored as such: types added to the catalogue later reach the endpoint too. */
export const ALL_EVENT_TYPES = '*';

const Events = Type.Array(Type.Union([Type.Literal(ALL_EVENT_TYPES), Type.Enum(EVENT_TYPE_NAMES)]), {
  minItems: 1,
  maxItems: EVENT_TYPE_NAMES.length,
  uniqueItems: true,
  description:
    'The event types to receive, or `["*"]` for every type, present and future (alone: it covers the rest). `ping` may be listed, but only the test operation sends it, to the endpoint tested, listed or not.',
});

export const WebhookEndpointSchema = Type.Object({
  id: Id('webhookEndpoint'),
  object: Type.Literal('webhook_endpoint'),
  url: Type.String(),
  events: Type.Array(Type.String()),
  connection_id: Nullable(Id('connection'), { description: 'Only events of this connection; null for every connection of the organization.' }),
  description: Nullable(Type.String()),
  status: Type.Enum(ENDPOINT_STATUSES),
  disabled_reason: Nullable(Type.String({ description: '`consecutive_failures` when disabled automatically, `manual` when disabled by a person.' })),
  secret_rotation: Nullable(
    Type.Object({ previous_secret_expires_at: Timestamp }, { description: 'During a rotation: when the previous secret stops signing.' }),
  ),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;

export const WebhookEndpointWithSecretSchema = Type.Intersect([
  WebhookEndpointSchema,
  Type.Object({ secret: Type.String({ description: 'The signing secret (`whsec_…`). Shown only in this response.' }) }),
]);

export const CreateWebhookEndpointBody = Strict({
  url: Url,
  events: Events,
  connection_id: Type.Optional(Id('connection')),
  description: Type.Optional(Type.String({ maxLength: 500 })),
  metadata: Type.Optional(Metadata),
});
export type CreateWebhookEndpointInput = Static<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = Strict({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  status: Type.Optional(Type.Enum(ENDPOINT_STATUSES, { description: 'Disable an endpoint, or enable one again (which also clears its failure count).' })),
  metadata: Type.Optional(Metadata),
});
export type UpdateWebhookEndpointInput = Static<typeof UpdateWebhookEndpointBody>;

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const WebhookDeliverySchema = Type.Object({
  id: Id('webhookDelivery'),
  object: Type.Literal('webhook_delivery'),
  endpoint_id: Id('webhookEndpoint'),
  event_id: Id('event'),
  event_type: Type.String(),
  attempt: Type.Integer({ description: '1 for the first attempt of an event at this endpoint.' }),
  replay_of: Nullable(Id('webhookDelivery')),
  status: Type.Enum(DELIVERY_STATUSES),
  response_status: Nullable(Type.Integer({ description: "The receiver's HTTP status code, when it answered." })),
  response_excerpt: Nullable(Type.String({ description: "The start of the receiver's answer (at most 1,000 characters)." })),
  error: Nullable(
    Type.String({
      description:
        'Why no answer was received: timeout, connection_refused, address_not_allowed, ...; worker_lost when the worker making the attempt stopped mid-way, so its outcome is unknown.',
    }),
  ),
  duration_ms: Nullable(Type.Integer()),
  next_retry_at: Nullable(Timestamp),
  created_at: Timestamp,
  completed_at: Nullable(Timestamp),
});
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookEndpointListQuery = ListQuery();
export const WebhookEndpointListSchema = ListOf(WebhookEndpointSchema);
export const WebhookDeliveryListQuery = ListQuery({ status: Type.Optional(Type.Enum(DELIVERY_STATUSES)) });
export const WebhookDeliveryListSchema = ListOf(WebhookDeliverySchema);

export const RotatedSecretSchema = Type.Object({
  object: Type.Literal('webhook_endpoint_secret'),
  endpoint_id: Id('webhookEndpoint'),
  secret: Type.String({ description: 'The new signing secret. Shown only in this response.' }),
  previous_secret_expires_at: Timestamp,
});

export const WebhookTestSchema = Type.Object({
  object: Type.Literal('webhook_test'),
  success: Type.Boolean(),
  status_code: Nullable(Type.Integer()),
  duration_ms: Type.Integer(),
  response_excerpt: Nullable(Type.String()),
  error: Nullable(Type.String()),
  delivery: WebhookDeliverySchema,
});
