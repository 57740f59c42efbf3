import type { Kysely } from 'kysely';
import { monotonicFactory } from 'ulid';
import { pooledRandomFraction } from '../../../lib/crypto.ts';
import type { SandboxTables } from './tables.ts';

export type { SandboxTables } from './tables.ts';

/**
 * Where the sandbox keeps its world: the host's store (its own `sandbox_*` tables), shared by every
 * process that serves the sandbox and kept across restarts.
 */
export interface SandboxStore {
  db: Kysely<SandboxTables>;
  /** The backend's unique-constraint violation, for a create that lost a race to a duplicate. */
  isUniqueViolation(error: unknown): boolean;
}

const nextUlid = monotonicFactory(pooledRandomFraction);

/** A `seq` value: creation order within a process, time order across processes. */
export function newSeq(now: Date): string {
  return nextUlid(now.getTime());
}
