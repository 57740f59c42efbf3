import Type, { type Static, type TSchema } from 'typebox';
import { MINUTE } from '../lib/clock.ts';

/**
 * A job is typed data: a name, the schema of its payload, how often and when to retry, and how
 * long one attempt may run. Payloads carry ids, not records: a handler reloads what it needs and
 * skips work that is already done, so running a job twice is harmless.
 */
export interface RetryPolicy {
  readonly maxAttempts: number;
  /** The wait before attempt `failedAttempt + 1`, given the 1-based number of the attempt that failed. */
  delayMs(failedAttempt: number): number;
}

export interface JobDefinition<S extends TSchema = TSchema> {
  readonly name: string;
  readonly payload: S;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
}

export type JobPayload<D extends JobDefinition> = Static<D['payload']>;

export function defineJob<S extends TSchema>(definition: JobDefinition<S>): JobDefinition<S> {
  return definition;
}

/**
 * Retries on a fixed schedule (`delays[i]` after the i-th failure), each delay moved by up to
 * ±`jitter` of itself so that many jobs that failed together do not all come back together.
 */
export function retrySchedule(delays: readonly number[], options: { jitter?: number; random?: () => number } = {}): RetryPolicy {
  const jitter = options.jitter ?? 0.1;
  const random = options.random ?? Math.random;
  return {
    maxAttempts: delays.length + 1,
    delayMs(failedAttempt) {
      const base = delays[Math.min(failedAttempt, delays.length) - 1] ?? 0;
      return Math.round(base * (1 + jitter * (2 * random() - 1)));
    },
  };
}

/** What a recurring job is given: the start of its slot, ISO 8601. */
export const SlotPayload = Type.Object({ slot: Type.String() });

/**
 * Work that recurs every `every` ms. Its slots start at the multiples of `every` since the Unix epoch
 * (an `every` of an hour: the top of each UTC hour); the scheduler enqueues one job per slot.
 */
export interface RecurringJobDefinition extends JobDefinition<typeof SlotPayload> {
  readonly every: number;
}

export function defineRecurringJob(definition: Omit<RecurringJobDefinition, 'payload'>): RecurringJobDefinition {
  // The scheduler looks at the clock every poll; a period shorter than this would be a busy loop.
  if (!Number.isInteger(definition.every) || definition.every < MINUTE)
    throw new Error(`job ${definition.name} recurs every ${definition.every} ms; at least a minute`);
  return { ...definition, payload: SlotPayload };
}

export function isRecurring(definition: JobDefinition): definition is RecurringJobDefinition {
  return 'every' in definition && typeof definition.every === 'number';
}

export const NO_RETRY: RetryPolicy = { maxAttempts: 1, delayMs: () => 0 };

/** A failure that says whether trying again can help; anything else thrown is treated as transient. */
export class JobError extends Error {
  readonly retryable: boolean;
  /** When the handler has already chosen (and recorded) the time of the next attempt. */
  readonly retryAt: Date | undefined;

  constructor(message: string, options: { retryable: boolean; retryAt?: Date; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'JobError';
    this.retryable = options.retryable;
    this.retryAt = options.retryAt;
  }
}

export function isRetryable(error: unknown): boolean {
  if (typeof error === 'object' && error !== null && 'retryable' in error && typeof error.retryable === 'boolean') return error.retryable;
  return true;
}
