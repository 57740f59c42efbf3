import { idempotencyKeyPurge } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { IdempotencyKeysService } from './idempotency-keys.service.ts';

export function idempotencyKeysJobs(service: IdempotencyKeysService): JobRegistration[] {
  return [handleJob(idempotencyKeyPurge, async (_payload, context) => void (await service.purgeExpired({ signal: context.signal })))];
}
