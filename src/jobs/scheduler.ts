import type { Db } from '../db/connect.ts';
import type { Clock } from '../lib/clock.ts';
import type { RecurringJobDefinition } from './job.ts';
import { FINISHED_JOB_RETENTION, createQueue, type Queue } from './queue.ts';

/** The start of the slot `at` falls in: the last multiple of the job's period since the epoch. */
export function slotOf(definition: RecurringJobDefinition, at: Date): Date {
  return new Date(Math.floor(at.getTime() / definition.every) * definition.every);
}

/** The slot's one dedupe key: every process that ticks in the slot computes the same. */
export function slotKey(definition: RecurringJobDefinition, slot: Date): string {
  return `${definition.name}@${slot.toISOString()}`;
}

export interface SchedulerOptions {
  db: Db;
  clock: Clock;
  jobs: readonly RecurringJobDefinition[];
  /** Default: a queue of its own on the same clock. */
  queue?: Queue;
}

/**
 * Recurring work, as jobs. A tick makes sure the current slot of every recurring job has its job,
 * due at the slot's start and enqueued under the slot's key: any number of schedulers (one per worker
 * process) ticking at once create one job per slot, and the key keeps it at one after it has run.
 * A scheduler remembers the last slot it enqueued for each job, so it writes once per slot, however
 * often it ticks.
 *
 * Slots missed while no worker ran are not made up: the first tick after the gap enqueues the
 * current slot only, so work that runs every hour runs once on return, not once per hour missed.
 * Recurring jobs are of the kind "bring things up to date", where one run covers any number of
 * missed ones.
 */
export function createScheduler(options: SchedulerOptions) {
  const { db, clock, jobs } = options;
  for (const job of jobs) {
    // A finished slot job is what keeps its slot from being enqueued again, so it must outlive the slot.
    if (job.every >= FINISHED_JOB_RETENTION.succeeded) {
      throw new Error(`job ${job.name} recurs every ${job.every} ms, not less than the ${FINISHED_JOB_RETENTION.succeeded} ms finished jobs are kept`);
    }
  }
  const queue = options.queue ?? createQueue({ clock });
  const lastSlot = new Map<string, number>();

  return {
    jobs,

    /** Enqueues each job's current slot unless this scheduler already has; returns those slots' keys. */
    async tick(): Promise<string[]> {
      const now = clock.now();
      const keys: string[] = [];
      for (const job of jobs) {
        const slot = slotOf(job, now);
        // `>=`: a clock stepped back does not enqueue a slot again (its key would refuse it anyway).
        if ((lastSlot.get(job.name) ?? Number.NEGATIVE_INFINITY) >= slot.getTime()) continue;
        const key = slotKey(job, slot);
        // A slot is caused by time, not by a change: it gets a transaction of its own.
        await db.transaction().execute((trx) => queue.enqueue(trx, job, { slot: slot.toISOString() }, { runAt: slot, dedupeKey: key }));
        lastSlot.set(job.name, slot.getTime());
        keys.push(key);
      }
      return keys;
    },
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;
