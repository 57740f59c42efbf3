import { Compile } from 'typebox/compile';
import { compileOnce } from '../db/compiled-query.ts';
import type { Trx } from '../db/connect.ts';
import type { JobsTable } from '../db/schema.ts';
import { DAY, type Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import type { JobDefinition, JobPayload } from './job.ts';

export interface EnqueueOptions {
  /** When to run; default now. */
  runAt?: Date;
  /**
   * A deterministic key for a job that must exist at most once (a timer, a scheduled slot). A second
   * enqueue with the same key is ignored, even after the first has run (for as long as the finished
   * job is kept: `FINISHED_JOB_RETENTION`), unless `replace` is set: then a job still waiting is
   * moved to the new time and payload (a timer being pushed back).
   */
  dedupeKey?: string;
  replace?: boolean;
}

/**
 * How long a finished job is kept (counted from its `run_at` and its last update, whichever is later).
 * Its dedupe key protects until then: a scheduled slot needs that for one period after the slot
 * starts (every recurring job's period is well below the week, checked by the scheduler), a timer
 * for about an hour after it fires (the window warning re-enqueues only before the window closes).
 * A week covers both with room to spare; failed jobs stay a month, as the trace of work given up on.
 */
export const FINISHED_JOB_RETENTION = { succeeded: 7 * DAY, failed: 30 * DAY } as const;

// Compiled once (db/compiled-query.ts): nearly every write request queues a job in its transaction.
// A dedupe key already queued is left as it is, or, with `replace`, given the new time and payload.
const insertJob = compileOnce((db, p: { row: JobsTable; replace: boolean }) =>
  db
    .insertInto('jobs')
    .values(p.row)
    .onConflict((conflict) => {
      const target = conflict.column('dedupe_key');
      return p.replace
        ? target.doUpdateSet({ run_at: p.row.run_at, payload: p.row.payload, updated_at: p.row.updated_at }).where('jobs.status', '=', 'queued')
        : target.doNothing();
    }),
);

/**
 * Rows a multi-row insert takes at most. SQLite binds at most 32,766 values in a statement (13 columns
 * each stay well below), and each row count is a shape of its own: a fan-out to more endpoints than
 * this is a few statements.
 */
const INSERT_BATCH = 100;

const insertJobs = compileOnce((db, p: { rows: JobsTable[] }) =>
  db
    .insertInto('jobs')
    .values(p.rows)
    .onConflict((conflict) => conflict.column('dedupe_key').doNothing()),
);

/**
 * Each job's payload schema compiled on its first enqueue: TypeBox's dynamic `Value.Check` walks the
 * schema on every call (about 3 µs for a one-field payload, measured), the compiled check does not,
 * and nearly every write request enqueues.
 */
const payloadChecks = new WeakMap<JobDefinition, ReturnType<typeof Compile>>();

function assertPayload(definition: JobDefinition, payload: unknown): void {
  let check = payloadChecks.get(definition);
  if (!check) payloadChecks.set(definition, (check = Compile(definition.payload)));
  if (!check.Check(payload)) throw new Error(`payload of job ${definition.name} does not match its schema: ${JSON.stringify(payload)}`);
}

/**
 * Writing jobs. `enqueue` takes the caller's transaction, so a change and the work it causes are
 * committed together or not at all (the transactional outbox): nothing is lost between the two.
 */
export function createQueue(deps: { clock: Clock; onEnqueue?: () => void }) {
  const { clock } = deps;
  const queue = {
    async enqueue<D extends JobDefinition>(trx: Trx, definition: D, payload: JobPayload<D>, options: EnqueueOptions = {}): Promise<string> {
      assertPayload(definition, payload);
      const now = clock.now();
      const runAt = (options.runAt ?? now).toISOString();
      const id = newId('job', now.getTime());
      const row = {
        id,
        name: definition.name,
        payload: JSON.stringify(payload),
        status: 'queued',
        run_at: runAt,
        attempts: 0,
        max_attempts: definition.retry.maxAttempts,
        locked_by: null,
        locked_until: null,
        last_error: null,
        dedupe_key: options.dedupeKey ?? null,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      await insertJob.run(trx, { row, replace: options.replace === true });
      deps.onEnqueue?.();
      return id;
    },

    /**
     * Several jobs of one kind, due now, in one insert (a fan-out: an event to each of its endpoints).
     * No dedupe key: each is a job of its own. Answers their ids, in the payloads' order.
     */
    async enqueueAll<D extends JobDefinition>(trx: Trx, definition: D, payloads: readonly JobPayload<D>[]): Promise<string[]> {
      return queue.enqueueMany(
        trx,
        definition,
        payloads.map((payload) => ({ payload })),
      );
    },

    /**
     * Many jobs of one kind, each with its own time and dedupe key, in a few inserts (a batch's sends
     * spaced along a number's lane). A key already taken is skipped, as with `enqueue`. Answers the
     * ids, in the jobs' order.
     */
    async enqueueMany<D extends JobDefinition>(
      trx: Trx,
      definition: D,
      jobs: readonly { payload: JobPayload<D>; runAt?: Date; dedupeKey?: string }[],
    ): Promise<string[]> {
      if (jobs.length === 0) return [];
      for (const job of jobs) assertPayload(definition, job.payload);
      const now = clock.now();
      const at = now.toISOString();
      const rows = jobs.map((job) => ({
        id: newId('job', now.getTime()),
        name: definition.name,
        payload: JSON.stringify(job.payload),
        status: 'queued',
        run_at: (job.runAt ?? now).toISOString(),
        attempts: 0,
        max_attempts: definition.retry.maxAttempts,
        locked_by: null,
        locked_until: null,
        last_error: null,
        dedupe_key: job.dedupeKey ?? null,
        created_at: at,
        updated_at: at,
      }));
      for (let start = 0; start < rows.length; start += INSERT_BATCH) await insertJobs.run(trx, { rows: rows.slice(start, start + INSERT_BATCH) });
      deps.onEnqueue?.();
      return rows.map((row) => row.id);
    },

    /** Removes a job that is still waiting (a timer that no longer applies). */
    async cancel(trx: Trx, dedupeKey: string): Promise<boolean> {
      const result = await trx.deleteFrom('jobs').where('dedupe_key', '=', dedupeKey).where('status', '=', 'queued').executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
  return queue;
}

export type Queue = ReturnType<typeof createQueue>;
