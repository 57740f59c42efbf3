import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, METADATA_MAX_KEYS, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

export const CONNECTION_STATUSES = ['pending', 'connected', 'needs_reauth', 'disconnected'] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

export const ConnectionSchema = Type.Object({
  id: Id('connection'),
  object: Type.Literal('connection'),
  name: Nullable(Type.String()),
  status: Type.Enum(CONNECTION_STATUSES),
  test: Type.Boolean({ description: 'Test connections take test keys only, and their traffic is excluded from usage.' }),
  coexistence: Type.Boolean({ description: "The number is also used from the owner's business messaging app." }),
  phone_number_id: Nullable(Type.String()),
  waba_id: Nullable(Type.String()),
  display_phone_number: Nullable(Type.String()),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Connection = Static<typeof ConnectionSchema>;

export { METADATA_MAX_KEYS };

export const UpdateConnectionBody = Strict({
  name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: METADATA_MAX_KEYS,
    propertyNames: { maxLength: 40 },
    description: 'Merged into the stored metadata; a key set to null is removed.',
  })),
});
export type UpdateConnectionInput = Static<typeof UpdateConnectionBody>;

export const ConnectionListQuery = ListQuery({
  status: Type.Optional(Type.Enum(CONNECTION_STATUSES)),
});
export const ConnectionListSchema = ListOf(ConnectionSchema);
