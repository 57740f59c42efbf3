import { providerWebhookProcess } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { ProviderWebhooksService } from './provider-webhooks.service.ts';

export function registerProviderWebhooksJobs(worker: Worker, service: ProviderWebhooksService): void {
  worker.register(providerWebhookProcess, (payload) => service.process(payload.provider_webhook_id));
}
