import { webhookDelivery, webhookDeliveryPurge } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { WebhookEndpointsService } from './webhook-endpoints.service.ts';

export function webhookEndpointsJobs(service: WebhookEndpointsService): JobRegistration[] {
  return [
    handleJob(webhookDelivery, (payload, context) => service.deliver(payload, context)),
    handleJob(webhookDeliveryPurge, async (_payload, context) => void (await service.purgeOldDeliveries({ signal: context.signal }))),
  ];
}
