import { handleJob, type JobRegistration } from '../module.ts';
import { usageRecipientPurge } from '../../jobs/catalog.ts';
import type { UsageService } from './usage.service.ts';

export function usageJobs(service: UsageService): JobRegistration[] {
  return [handleJob(usageRecipientPurge, async () => void (await service.purgeRecipients()))];
}
