import Type, { type Static } from 'typebox';
import { MODES, SCOPES } from '../credentials/scopes.schemas.ts';
import { ExpandParameter, Id, ListOf, ListQuery, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { ConnectionSchema } from '../connections/connections.schemas.ts';

export const API_KEY_RELATIONS = ['connection'] as const;

export const API_KEY_KINDS = ['organization', 'connection'] as const;
export type ApiKeyKind = (typeof API_KEY_KINDS)[number];

const ScopeSchema = Type.Enum(SCOPES);
const ModeSchema = Type.Enum(MODES);

export const ApiKeySchema = Type.Object({
  id: Id('apiKey'),
  object: Type.Literal('api_key'),
  kind: Type.Enum(API_KEY_KINDS),
  mode: ModeSchema,
  connection_id: Nullable(Id('connection')),
  name: Nullable(Type.String()),
  scopes: Type.Array(ScopeSchema),
  redacted_key: Type.String({ description: 'The prefix and last four characters, to recognise the key: `csk_live_…a1B2`.' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  metadata: Metadata,
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
  rotated_to: Nullable(Id('apiKey', 'The key that replaced this one by rotation.')),
  connection: Type.Optional(Nullable(ConnectionSchema, { description: 'With `expand=connection`: the connection of a connection key.' })),
});
export type ApiKey = Static<typeof ApiKeySchema>;

export const ApiKeyWithSecretSchema = Type.Intersect([
  ApiKeySchema,
  Type.Object({ key: Type.String({ description: 'The full key. Shown only in this response; store it now.' }) }),
]);
export type ApiKeyWithSecret = Static<typeof ApiKeyWithSecretSchema>;

export const CreateApiKeyBody = Strict({
  kind: Type.Enum(API_KEY_KINDS),
  mode: ModeSchema,
  connection_id: Type.Optional(Id('connection', 'Required for connection keys; not allowed for organization keys.')),
  scopes: Type.Optional(Type.Array(ScopeSchema, { minItems: 1, maxItems: SCOPES.length, uniqueItems: true })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  metadata: Type.Optional(Metadata),
});
export type CreateApiKeyInput = Static<typeof CreateApiKeyBody>;

export const ApiKeyListQuery = ListQuery({
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('revoked')])),
  expand: ExpandParameter(API_KEY_RELATIONS),
});
export const ApiKeyListSchema = ListOf(ApiKeySchema);
