import { billingMeterReport, billingStripeEvent } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { BillingService } from './billing.service.ts';

export function billingJobs(service: BillingService): JobRegistration[] {
  return [
    handleJob(billingStripeEvent, (payload, context) => service.processStripeEvent(payload.event_id, context)),
    handleJob(billingMeterReport, (payload) => service.reportUsage(payload.slot)),
  ];
}
