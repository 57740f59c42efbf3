/**
 * Idempotency keys: the record that lets a client retry a side-effecting POST safely. A key is scoped
 * to an organization and a mode (live or test); its first request claims it atomically, and its
 * response (status and body) answers every retry of the same request for 24 hours, while a different
 * request under the same key, or a retry while the first still runs, is refused. Responses that are
 * not final (a 5xx, a retryable error, a validation failure) release the key instead, and stored
 * bodies are sealed because some carry a secret that is shown only once. This module owns the rules
 * and the table; src/http/idempotency.ts applies them to every authenticated POST route.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { Module } from '../module.ts';
import { idempotencyKeysJobs } from './idempotency-keys.job.ts';
import { createIdempotencyKeysService, type IdempotencyKeysService } from './idempotency-keys.service.ts';
import { createIdempotencyKeysStore } from './idempotency-keys.store.ts';

export function createIdempotencyKeysModule(deps: {
  db: Db;
  clock: Clock;
  isUniqueViolation: (error: unknown) => boolean;
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  lockTimeoutMs?: number;
}): Module<IdempotencyKeysService> {
  const service = createIdempotencyKeysService({ ...deps, store: createIdempotencyKeysStore() });
  return { name: 'idempotency-keys', service, jobs: idempotencyKeysJobs(service) };
}

export {
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IDEMPOTENCY_LOCK_TIMEOUT_MS,
  IDEMPOTENCY_RETENTION_MS,
  canonicalJson,
  isFinalResponse,
  requestHash,
} from './idempotency-keys.service.ts';
export type { Claim, IdempotencyKeysService, IdempotencyRequirement } from './idempotency-keys.service.ts';
