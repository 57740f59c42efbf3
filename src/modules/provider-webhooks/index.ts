/**
 * Provider webhooks: everything the provider tells us, at `/provider/webhook`. Owns the subscription
 * handshake, the signature check over the raw bytes, deduplication of the provider's retries, and
 * the queued processing that hands each update to the module it concerns (messages, connections).
 */
import type { Module } from '../module.ts';
import { providerWebhooksJobs } from './provider-webhooks.job.ts';
import { registerProviderWebhooksRoutes } from './provider-webhooks.routes.ts';
import { createProviderWebhooksService, type ProviderWebhooksService, type ProviderWebhooksServiceDeps } from './provider-webhooks.service.ts';
import { createProviderWebhooksStore } from './provider-webhooks.store.ts';

export function createProviderWebhooksModule(deps: Omit<ProviderWebhooksServiceDeps, 'store'>): Module<ProviderWebhooksService> {
  const service = createProviderWebhooksService({ ...deps, store: createProviderWebhooksStore() });
  return {
    name: 'provider-webhooks',
    service,
    routes: (server) => registerProviderWebhooksRoutes(server, service),
    jobs: providerWebhooksJobs(service),
  };
}

export type { InboundWebhooks, ProviderWebhooksService } from './provider-webhooks.service.ts';
