import { idempotencyKeyPurge } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { IdempotencyKeysService } from './idempotency-keys.service.ts';

export function registerIdempotencyKeysJobs(worker: Worker, service: IdempotencyKeysService): void {
  worker.register(idempotencyKeyPurge, async (_payload, context) => void (await service.purgeExpired({ signal: context.signal })));
}
