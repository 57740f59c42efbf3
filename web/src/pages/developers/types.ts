/**
 * The API's types for the Developers pages, from the server's own schemas (type-only: nothing of
 * the server is bundled), so a field renamed there fails this folder's type-check.
 */
import type { Static } from 'typebox';
import type { AuditEvent } from '../../../../src/modules/audit-events/audit-events.schemas.ts';
import type {
  RotatedSecretSchema,
  WebhookEndpoint,
  WebhookEndpointWithSecretSchema,
  WebhookTestSchema,
} from '../../../../src/modules/webhook-endpoints/webhook-endpoints.schemas.ts';

export type { ApiKey, ApiKeyWithSecret, CreateApiKeyInput } from '../../../../src/modules/api-keys/api-keys.schemas.ts';
export type { AuthorizedApp } from '../../../../src/modules/oauth/oauth.schemas.ts';
export type {
  CreateWebhookEndpointInput,
  UpdateWebhookEndpointInput,
  WebhookDelivery,
} from '../../../../src/modules/webhook-endpoints/webhook-endpoints.schemas.ts';
export type { WebhookEndpoint };

export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecretSchema>;
export type WebhookTest = Static<typeof WebhookTestSchema>;
export type RotatedSecret = Static<typeof RotatedSecretSchema>;

/** An audit entry as it arrives: the server sends `data` as stored, a plain object on the wire. */
export type AuditEntry = Omit<AuditEvent, 'data'> & { data: Record<string, unknown> };
