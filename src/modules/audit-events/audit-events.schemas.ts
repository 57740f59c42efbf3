import Type, { type Static } from 'typebox';
import { CREDENTIAL_KINDS } from '../credentials/scopes.schemas.ts';
import { Id, ListOf, ListQuery, Nullable, StoredJsonOf, Timestamp } from '../../http/schemas.ts';

export const ACTOR_TYPES = ['member', 'api_key', 'oauth_token', 'system'] as const;

export const AuditEventSchema = Type.Object(
  {
    id: Id('auditEvent'),
    object: Type.Literal('audit_event'),
    action: Type.String({ description: 'What happened, as `<resource>.<verb>` (api_key.created, connection.updated, ...).' }),
    actor: Type.Object({
      type: Type.Enum(ACTOR_TYPES),
      id: Nullable(Type.String()),
    }),
    credential: Nullable(Type.Object({ type: Type.Enum(CREDENTIAL_KINDS), id: Type.String() })),
    target: Type.Object({ type: Type.String(), id: Type.String() }),
    request_id: Nullable(Type.String()),
    oauth_client: Nullable(
      Type.Object({
        id: Nullable(Type.String({ description: 'The client id: `oac_…` for a registered app, or the URL of its client ID metadata document.' })),
        name: Type.String(),
      }),
      { description: 'For a change made with an OAuth token: the app it was made through; otherwise null.' },
    ),
    // Returned as stored, without a parse and a re-serialization per entry.
    data: StoredJsonOf(Type.Record(Type.String(), Type.Unknown())),
    created_at: Timestamp,
  },
  { description: 'One entry of the audit log: a change made through the API or the dashboard.' },
);
export type AuditEvent = Static<typeof AuditEventSchema>;

export const AuditEventListQuery = ListQuery({
  action: Type.Optional(Type.String({ maxLength: 100 })),
  target_id: Type.Optional(Type.String({ maxLength: 64 })),
});
export const AuditEventListSchema = ListOf(AuditEventSchema);
