import { approvalExpire } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { ApprovalsService } from './approvals.service.ts';

export function approvalJobs(service: ApprovalsService): JobRegistration[] {
  return [handleJob(approvalExpire, (payload) => service.expire(payload.approval_id))];
}
