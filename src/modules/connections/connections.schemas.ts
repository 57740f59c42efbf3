import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, MetadataPatch, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

export const CONNECTION_STATUSES = ['connected', 'needs_reauth', 'disconnected'] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

export const QUALITY_RATINGS = ['green', 'yellow', 'red', 'unknown'] as const;
export type QualityRating = (typeof QUALITY_RATINGS)[number];

export const ONBOARDING_STATUSES = ['pending', 'importing', 'completed', 'failed'] as const;
export type OnboardingStatus = (typeof ONBOARDING_STATUSES)[number];

export const OnboardingSchema = Type.Object(
  {
    status: Type.Enum(ONBOARDING_STATUSES),
    progress: Type.Integer({ minimum: 0, maximum: 100, description: "The provider's own measure of the import, in percent." }),
    messages_imported: Type.Integer({ minimum: 0 }),
    started_at: Timestamp,
    completed_at: Nullable(Timestamp),
    failure_reason: Nullable(Type.String()),
  },
  { description: "Coexistence numbers only: the import of the owner's chat history from the business app." },
);
export type Onboarding = Static<typeof OnboardingSchema>;

export const ConnectionSchema = Type.Object({
  id: Id('connection'),
  object: Type.Literal('connection'),
  name: Nullable(Type.String()),
  status: Type.Enum(CONNECTION_STATUSES, {
    description:
      '`needs_reauth`: the provider no longer accepts the stored token; `POST .../reauthorise` with a new code. `disconnected`: deleted; kept for its history.',
  }),
  test: Type.Boolean({
    description:
      'A test connection takes test keys as well as live ones (a test key takes test connections only); its traffic is never counted as usage, whichever key sent it.',
  }),
  coexistence: Type.Boolean({ description: "The number is also used from the owner's business messaging app." }),
  phone_number_id: Type.String(),
  waba_id: Type.String(),
  display_phone_number: Nullable(Type.String()),
  verified_name: Nullable(Type.String()),
  quality_rating: Nullable(Type.Enum(QUALITY_RATINGS)),
  messaging_limit_tier: Nullable(Type.String({ description: "The provider's tier, e.g. `TIER_2K`." })),
  throughput_per_second: Type.Integer({ description: 'The ceiling every send to the provider is paced to.' }),
  onboarding: Nullable(OnboardingSchema),
  metadata: Metadata,
  connected_at: Nullable(Timestamp),
  disconnected_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Connection = Static<typeof ConnectionSchema>;

const ProviderId = (what: string) => Type.String({ pattern: '^[0-9]{1,32}$', description: `The provider's ${what} id (digits).` });

/**
 * An OAuth authorization code is visible ASCII (RFC 6749, Appendix A.11: `1*VSCHAR`). Anything
 * else cannot be a code, and travels to the provider percent-encoded in a URL: 2,048 characters of
 * three UTF-8 bytes each made a URL past the provider's header limit, answered as a 502.
 */
const AuthorizationCode = (description?: string) =>
  Type.String({ minLength: 1, maxLength: 2048, pattern: '^[\\x20-\\x7E]+$', ...(description === undefined ? {} : { description }) });

export const ConnectBody = Strict({
  code: AuthorizationCode('The code Embedded Signup handed to the browser (visible ASCII); the sandbox accepts any.'),
  phone_number_id: Type.Optional(ProviderId('phone number')),
  waba_id: Type.Optional(ProviderId('business account')),
  pin: Type.Optional(
    Type.String({ pattern: '^[0-9]{6}$', description: 'Registers the number with this two-step verification PIN (not for coexistence numbers).' }),
  ),
  test: Type.Optional(Type.Boolean()),
  coexistence: Type.Optional(Type.Boolean()),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  metadata: Type.Optional(Metadata),
});
export type ConnectInput = Static<typeof ConnectBody>;

export const ReauthoriseBody = Strict({
  code: AuthorizationCode(),
});
export type ReauthoriseInput = Static<typeof ReauthoriseBody>;

export const UpdateConnectionBody = Strict({
  name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateConnectionInput = Static<typeof UpdateConnectionBody>;

export const ConnectionListQuery = ListQuery({
  status: Type.Optional(Type.Enum(CONNECTION_STATUSES)),
});
export const ConnectionListSchema = ListOf(ConnectionSchema);
