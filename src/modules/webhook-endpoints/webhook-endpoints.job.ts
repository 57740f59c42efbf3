import { webhookDelivery, webhookDeliveryPurge } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { WebhookEndpointsService } from './webhook-endpoints.service.ts';

export function registerWebhookEndpointsJobs(worker: Worker, service: WebhookEndpointsService): void {
  worker.register(webhookDelivery, (payload, context) => service.deliver(payload, context));
  worker.register(webhookDeliveryPurge, async (_payload, context) => void (await service.purgeOldDeliveries({ signal: context.signal })));
}
