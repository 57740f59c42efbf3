import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

export const CONNECTOR_IDS = ['http_bearer', 'http_basic', 'http_api_key', 'webhook'] as const;
export type ConnectorId = (typeof CONNECTOR_IDS)[number];

export const AUTH_TYPES = ['api_key', 'bearer', 'basic', 'oauth2', 'webhook'] as const;
export const FIELD_TYPES = ['string', 'secret', 'select'] as const;

export const CONNECTOR_ACCOUNT_STATUSES = ['pending', 'active', 'needs_reauth', 'revoked', 'error'] as const;
export type ConnectorAccountStatus = (typeof CONNECTOR_ACCOUNT_STATUSES)[number];

export const ConnectorFieldSchema = Type.Object({
  name: Type.String({ description: 'The key under `fields` when connecting.' }),
  label: Type.String(),
  type: Type.Enum(FIELD_TYPES, { description: '`secret` fields are sealed and never returned; `string` and `select` are settings.' }),
  required: Type.Boolean(),
  options: Type.Optional(Type.Array(Type.String(), { description: '`select` fields: the values allowed.' })),
  default: Type.Optional(Type.String()),
});
export type ConnectorField = Static<typeof ConnectorFieldSchema>;

export const ConnectorSchema = Type.Object(
  {
    id: Type.Enum(CONNECTOR_IDS),
    object: Type.Literal('connector'),
    name: Type.String(),
    description: Type.String(),
    auth_type: Type.Enum(AUTH_TYPES),
    fields: Type.Array(ConnectorFieldSchema),
    allowed_hosts: Type.String({ description: 'Where requests through an account may go: for every connector here, the host of its `base_url` only.' }),
    test_request: Type.Object(
      { method: Type.String(), path: Type.String({ description: 'Relative to `base_url`; `test_path` overrides it when the connector has that field.' }) },
      { description: 'What connecting sends: the account is active only if it answers 2xx.' },
    ),
    docs_url: Type.String(),
  },
  { description: 'A kind of system an automation can call, as an entry of the static catalogue.' },
);
export type Connector = Static<typeof ConnectorSchema>;
export const ConnectorListSchema = ListOf(ConnectorSchema);

export const ConnectorAccountSchema = Type.Object(
  {
    id: Id('connectorAccount'),
    object: Type.Literal('connector_account'),
    connector: Type.Enum(CONNECTOR_IDS),
    name: Type.String(),
    status: Type.Enum(CONNECTOR_ACCOUNT_STATUSES, { description: '`active` once its test request answered 2xx; `revoked` once disconnected.' }),
    mode: Type.Enum(['live', 'test'] as const, { description: 'Only automations of the same mode may use it.' }),
    connection_id: Nullable(Id('connection'), { description: 'When set, only automations of that connection may use it.' }),
    base_url: Type.String(),
    allowed_hosts: Type.Array(Type.String()),
    secret_hint: Nullable(Type.String({ description: 'The last characters of the secret, to tell accounts apart; the secret itself is never returned.' })),
    last_verified_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    last_error: Nullable(Type.String()),
    created_by: Type.String(),
    created_at: Timestamp,
  },
  { description: 'An organization’s credentials for another system, sealed; what `http_request` steps call through.' },
);
export type ConnectorAccount = Static<typeof ConnectorAccountSchema>;

export const CreateConnectorAccountBody = Strict({
  connector: Type.Enum(CONNECTOR_IDS),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  fields: Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 4096 }), {
    maxProperties: 20,
    description: 'The connector’s fields (`GET /v1/connectors`): `base_url` (or `url`), the secret, and its settings.',
  }),
  connection_id: Type.Optional(Id('connection', 'Only automations of this connection may use the account; its mode is the connection’s.')),
  mode: Type.Optional(Type.Enum(['live', 'test'] as const, { description: 'Dashboard tokens only; an API key’s accounts have its mode.' })),
});
export type CreateConnectorAccountInput = Static<typeof CreateConnectorAccountBody>;

export const ConnectorAccountListQuery = ListQuery({
  status: Type.Optional(Type.Enum(CONNECTOR_ACCOUNT_STATUSES)),
  connector: Type.Optional(Type.Enum(CONNECTOR_IDS)),
});
export const ConnectorAccountListSchema = ListOf(ConnectorAccountSchema);
