/**
 * The cloud adapter: the only code that knows the WhatsApp Cloud API's Graph URLs, payloads, error
 * codes and webhook envelopes (cloud-api-facts.md). Outwards it speaks the provider port
 * (`../provider.ts`) and the domain's updates (`../updates.ts`): `createCloudProvider` for calls,
 * `verifyProviderSignature` and `parseProviderWebhook` for the webhooks the provider sends us.
 */
export { createCloudProvider, DEFAULT_MAX_MEDIA_BYTES, type CloudProvider, type CloudProviderOptions } from './cloud-adapter.ts';
export { InvalidProviderWebhookError, parseProviderWebhook } from './webhook-parser.ts';
export { verifyProviderSignature } from './webhook-signature.ts';
