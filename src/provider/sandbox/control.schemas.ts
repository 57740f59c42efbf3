import Type, { type Static } from 'typebox';
import { INT32_MAX } from '../../lib/integers.ts';
import { LIMIT_TIERS, QUALITY_RATINGS, THROTTLE_CODES, TEMPLATE_REVIEWS, THROUGHPUT_LEVELS } from './state.ts';
import { TEMPLATE_EVENTS } from './templates.ts';
import { STATUSES } from './webhooks.ts';

/** The bodies of the control API (`/control`); each is checked before anything happens. */

const Loose = Type.Record(Type.String(), Type.Unknown());
const Phone = Type.String({ pattern: '^\\+?[0-9]{6,15}$' });
const NonEmpty = Type.String({ minLength: 1 });

/** A media object a simulated user (or the business app) sends: an uploaded id, or a file the sandbox makes. */
export const MediaInputSchema = Type.Object(
  {
    /** An existing media id of the number's account; without it the sandbox creates the file. */
    id: Type.Optional(NonEmpty),
    mime_type: Type.Optional(NonEmpty),
    /** The file's bytes; without them a small placeholder of the right type is stored. */
    content_base64: Type.Optional(Type.String()),
    filename: Type.Optional(NonEmpty),
    caption: Type.Optional(Type.String()),
    voice: Type.Optional(Type.Boolean()),
    animated: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type MediaInput = Static<typeof MediaInputSchema>;

const LocationSchema = Type.Object(
  {
    latitude: Type.Number({ minimum: -90, maximum: 90 }),
    longitude: Type.Number({ minimum: -180, maximum: 180 }),
    name: Type.Optional(Type.String()),
    address: Type.Optional(Type.String()),
    url: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const ContactSchema = Type.Object({ name: Type.Object({ formatted_name: NonEmpty }, { additionalProperties: true }) }, { additionalProperties: true });

const InteractiveSchema = Type.Union([
  Type.Object(
    { type: Type.Literal('button_reply'), button_reply: Type.Object({ id: NonEmpty, title: NonEmpty }, { additionalProperties: false }) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('list_reply'),
      list_reply: Type.Object({ id: NonEmpty, title: NonEmpty, description: Type.Optional(Type.String()) }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('nfm_reply'),
      nfm_reply: Type.Object(
        { name: Type.Optional(Type.String()), body: Type.Optional(Type.String()), response_json: Type.String() },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
]);

const ReactionSchema = Type.Object({ message_id: NonEmpty, emoji: Type.Optional(Type.String()) }, { additionalProperties: false });

const OrderSchema = Type.Object(
  {
    catalog_id: NonEmpty,
    text: Type.Optional(Type.String()),
    product_items: Type.Array(
      Type.Object(
        {
          product_retailer_id: NonEmpty,
          quantity: Type.Integer({ minimum: 1 }),
          item_price: Type.Number({ minimum: 0 }),
          currency: Type.String({ pattern: '^[A-Z]{3}$' }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);

export const SYSTEM_TYPES = ['customer_changed_number', 'customer_identity_changed', 'user_changed_user_id'] as const;
const SystemSchema = Type.Object(
  {
    type: Type.Enum(SYSTEM_TYPES),
    body: Type.Optional(Type.String()),
    /** For customer_changed_number: the user's new WhatsApp id. */
    new_wa_id: Type.Optional(Type.String({ pattern: '^[0-9]{6,15}$' })),
    /** For user_changed_user_id: the user's new business-scoped id. */
    user_id: Type.Optional(NonEmpty),
  },
  { additionalProperties: false },
);

const ReferralSchema = Type.Object(
  {
    source_url: NonEmpty,
    source_id: Type.Optional(NonEmpty),
    source_type: Type.Optional(Type.Enum(['ad', 'post'] as const)),
    headline: Type.Optional(Type.String()),
    body: Type.Optional(Type.String()),
    media_type: Type.Optional(Type.Enum(['image', 'video'] as const)),
    image_url: Type.Optional(Type.String()),
    video_url: Type.Optional(Type.String()),
    thumbnail_url: Type.Optional(Type.String()),
    ctwa_clid: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const ContextSchema = Type.Object(
  {
    /** Makes the message a quoted reply to this (business-sent) message id. */
    message_id: Type.Optional(NonEmpty),
    forwarded: Type.Optional(Type.Boolean()),
    frequently_forwarded: Type.Optional(Type.Boolean()),
    referred_product: Type.Optional(Type.Object({ catalog_id: NonEmpty, product_retailer_id: NonEmpty }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

/** The type objects a message can carry, shared by inbound messages and coexistence echoes. */
const messageContent = {
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  image: Type.Optional(MediaInputSchema),
  video: Type.Optional(MediaInputSchema),
  audio: Type.Optional(MediaInputSchema),
  document: Type.Optional(MediaInputSchema),
  sticker: Type.Optional(MediaInputSchema),
  location: Type.Optional(LocationSchema),
  contacts: Type.Optional(Type.Array(ContactSchema, { minItems: 1 })),
  interactive: Type.Optional(InteractiveSchema),
  reaction: Type.Optional(ReactionSchema),
};

export const InboundSchema = Type.Object(
  {
    phone_number_id: NonEmpty,
    from: Phone,
    type: NonEmpty,
    /** The sender's profile name, shown in `contacts[].profile.name`. */
    name: Type.Optional(Type.String()),
    ...messageContent,
    button: Type.Optional(Type.Object({ text: NonEmpty, payload: Type.String() }, { additionalProperties: false })),
    order: Type.Optional(OrderSchema),
    system: Type.Optional(SystemSchema),
    /** A click-to-WhatsApp ad or post the user came from (allowed on text messages). */
    referral: Type.Optional(ReferralSchema),
    context: Type.Optional(ContextSchema),
  },
  { additionalProperties: false },
);
export type Inbound = Static<typeof InboundSchema>;

export const EchoSchema = Type.Object(
  {
    phone_number_id: NonEmpty,
    to: Phone,
    type: Type.Enum(['text', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'contacts', 'reaction'] as const),
    ...messageContent,
  },
  { additionalProperties: false },
);
export type Echo = Static<typeof EchoSchema>;

export const ControlStatusSchema = Type.Object(
  {
    message_id: NonEmpty,
    status: Type.Enum(STATUSES),
    error: Type.Optional(
      Type.Object({ code: Type.Integer(), title: Type.Optional(Type.String()), details: Type.Optional(Type.String()) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

const FailureSchema = Type.Object(
  { code: Type.Integer(), http_status: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })), details: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

export const BehaviourSchema = Type.Object(
  {
    latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
    fail_next: Type.Optional(Type.Union([FailureSchema, Type.Null()])),
    /** The next accepted send answers 200, then a `failed` status with this code follows. */
    fail_next_async: Type.Optional(
      Type.Union([Type.Object({ code: Type.Integer(), details: Type.Optional(Type.String()) }, { additionalProperties: false }), Type.Null()]),
    ),
    auto_status: Type.Optional(Type.Boolean()),
    throttle: Type.Optional(
      Type.Union([
        Type.Object(
          {
            code: Type.Optional(Type.Enum(THROTTLE_CODES)),
            estimated_time_to_regain_access: Type.Optional(Type.Integer({ minimum: 0, maximum: 1440 })),
            /** Refuse this many calls, then clear; omitted: until cleared with `throttle: null`. */
            calls: Type.Optional(Type.Integer({ minimum: 1 })),
            waba_id: Type.Optional(NonEmpty),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
    /** Per-number sends per second; null restores the provider's defaults. */
    throughput_mps: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: INT32_MAX }), Type.Null()])),
    template_review: Type.Optional(Type.Enum(TEMPLATE_REVIEWS)),
  },
  { additionalProperties: false },
);

export const TemplateStatusSchema = Type.Object(
  {
    template_id: Type.Optional(NonEmpty),
    waba_id: Type.Optional(NonEmpty),
    name: Type.Optional(NonEmpty),
    language: Type.Optional(NonEmpty),
    status: Type.Enum(TEMPLATE_EVENTS),
    reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: false },
);

export const QUALITY_EVENTS = ['FLAGGED', 'UNFLAGGED', 'DOWNGRADE', 'UPGRADE', 'ONBOARDING', 'THROUGHPUT_UPGRADE'] as const;

export const QualitySchema = Type.Object(
  { phone_number_id: NonEmpty, quality_rating: Type.Enum(QUALITY_RATINGS), event: Type.Optional(Type.Enum(QUALITY_EVENTS)) },
  { additionalProperties: false },
);

export const LimitTierSchema = Type.Object(
  { phone_number_id: NonEmpty, tier: Type.Enum(LIMIT_TIERS), event: Type.Optional(Type.Enum(QUALITY_EVENTS)) },
  { additionalProperties: false },
);

export const ThroughputSchema = Type.Object({ phone_number_id: NonEmpty, level: Type.Enum(THROUGHPUT_LEVELS) }, { additionalProperties: false });

export const HISTORY_STATUSES = ['DELIVERED', 'READ', 'PLAYED', 'PENDING', 'SENT', 'ERROR'] as const;

export const HistorySchema = Type.Object(
  {
    phone_number_id: NonEmpty,
    phase: Type.Optional(Type.Enum([0, 1, 2] as const)),
    chunk_order: Type.Optional(Type.Integer({ minimum: 1 })),
    progress: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    threads: Type.Optional(
      Type.Array(
        Type.Object(
          {
            user: Phone,
            messages: Type.Array(
              Type.Object(
                {
                  direction: Type.Enum(['inbound', 'outbound'] as const),
                  type: Type.Optional(Type.Enum(['text', 'image', 'video', 'audio', 'document', 'sticker'] as const)),
                  text: Type.Optional(Type.String({ minLength: 1 })),
                  caption: Type.Optional(Type.String()),
                  /** Unix seconds, or an ISO 8601 time; default now. */
                  timestamp: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ format: 'date-time' })])),
                  status: Type.Optional(Type.Enum(HISTORY_STATUSES)),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    /** The business declined to share its history: sends the error (default 2593109) instead of threads. */
    error: Type.Optional(Type.Object({ code: Type.Optional(Type.Integer()), details: Type.Optional(Type.String()) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type History = Static<typeof HistorySchema>;

export const StateSyncSchema = Type.Object(
  {
    phone_number_id: NonEmpty,
    contacts: Type.Array(
      Type.Object(
        {
          phone_number: Phone,
          full_name: Type.Optional(Type.String()),
          first_name: Type.Optional(Type.String()),
          action: Type.Optional(Type.Enum(['add', 'remove'] as const)),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);

export const ACCOUNT_EVENTS = [
  'PARTNER_ADDED',
  'PARTNER_APP_INSTALLED',
  'PARTNER_APP_UNINSTALLED',
  'PARTNER_REMOVED',
  'ACCOUNT_VIOLATION',
  'ACCOUNT_RESTRICTION',
  'DISABLED_UPDATE',
  'ACCOUNT_DELETED',
  'ACCOUNT_OFFBOARDED',
  'ACCOUNT_RECONNECTED',
  'AUTH_INTL_PRICE_ELIGIBILITY_UPDATE',
  'BUSINESS_PRIMARY_LOCATION_COUNTRY_UPDATE',
  'VOLUME_BASED_PRICING_TIER_UPDATE',
  'MM_LITE_TERMS_SIGNED',
  'AD_ACCOUNT_LINKED',
  'PARTNER_CLIENT_CERTIFICATION_STATUS_UPDATE',
] as const;

/** Events after which the app has lost the account: its tokens stop working and its subscription ends. */
export const ACCESS_ENDING_EVENTS: readonly string[] = ['PARTNER_APP_UNINSTALLED', 'PARTNER_REMOVED', 'ACCOUNT_DELETED', 'ACCOUNT_OFFBOARDED'];

export const AccountUpdateSchema = Type.Object(
  {
    waba_id: NonEmpty,
    event: Type.Enum(ACCOUNT_EVENTS),
    waba_info: Type.Optional(Loose),
    violation_info: Type.Optional(Loose),
    ban_info: Type.Optional(Loose),
    restriction_info: Type.Optional(Type.Array(Loose)),
    volume_tier_info: Type.Optional(Loose),
    disconnection_info: Type.Optional(Loose),
    auth_international_rate_eligibility: Type.Optional(Loose),
    country: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const RevokeTokenSchema = Type.Union([
  Type.Object({ access_token: NonEmpty }, { additionalProperties: false }),
  Type.Object({ waba_id: NonEmpty }, { additionalProperties: false }),
]);
