import { providerWebhookProcess } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { ProviderWebhooksService } from './provider-webhooks.service.ts';

export function providerWebhooksJobs(service: ProviderWebhooksService): JobRegistration[] {
  return [handleJob(providerWebhookProcess, (payload, context) => service.process(payload.provider_webhook_id, context))];
}
