/**
 * Provider webhooks: everything the provider tells us, at `/provider/webhook`. Owns the subscription
 * handshake, the signature check over the raw bytes, deduplication of the provider's retries, and
 * the queued processing that hands each update to the module it concerns (messages, connections).
 */
import type { Worker } from '../../jobs/worker.ts';
import type { HttpServer } from '../../http/server.ts';
import { registerProviderWebhooksJobs } from './provider-webhooks.job.ts';
import { registerProviderWebhooksRoutes } from './provider-webhooks.routes.ts';
import { createProviderWebhooksService, type ProviderWebhooksServiceDeps } from './provider-webhooks.service.ts';
import { createProviderWebhooksStore } from './provider-webhooks.store.ts';

export function createProviderWebhooksModule(deps: Omit<ProviderWebhooksServiceDeps, 'store'>) {
  const service = createProviderWebhooksService({ ...deps, store: createProviderWebhooksStore() });
  return {
    service,
    registerRoutes: (app: HttpServer) => registerProviderWebhooksRoutes(app, service),
    registerJobs: (worker: Worker) => registerProviderWebhooksJobs(worker, service),
  };
}

export type { InboundWebhooks, ProviderWebhooksService } from './provider-webhooks.service.ts';
