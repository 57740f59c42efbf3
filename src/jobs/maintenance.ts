import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';
import { HOUR, type Clock } from '../lib/clock.ts';
import { JOBS, jobPurge } from './catalog.ts';
import type { JobDefinition } from './job.ts';
import { PURGE_BUDGET_MS, purgeInBatches, type PurgeOptions, type PurgeResult } from './purge.ts';
import { FINISHED_JOB_RETENTION } from './queue.ts';
import { handleJob, type JobRegistration, type WorkerLog } from './worker.ts';

/**
 * A queued job of a name this version does not know, overdue by this much, is stranded: a rolling
 * deploy (when an old worker meets a new job) is over long before.
 */
export const STRANDED_AFTER_MS = HOUR;

export interface StrandedJobs {
  name: string;
  count: number;
}

/** The queue's own housekeeping: its table is kept to the jobs that still matter. */
export function createQueueMaintenance(deps: { db: Db; clock: Clock; log: Pick<WorkerLog, 'warn'>; catalog?: readonly JobDefinition[] }) {
  const { db, clock, log } = deps;
  const known = (deps.catalog ?? JOBS).map((definition) => definition.name);

  // Through the (status, run_at) index; `updated_at` also, since a job may finish long after it was due.
  async function deleteFinished(status: keyof typeof FINISHED_JOB_RETENTION, before: string, limit: number): Promise<number> {
    const result = await db
      .deleteFrom('jobs')
      .where(
        'id',
        'in',
        db.selectFrom('jobs').select('id').where('status', '=', status).where('run_at', '<', before).where('updated_at', '<', before).limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  return {
    /**
     * Deletes succeeded and failed jobs past `FINISHED_JOB_RETENTION`, in batches. Queued and running
     * jobs are never touched, whatever their age.
     */
    async purgeFinished(options: PurgeOptions = {}): Promise<PurgeResult> {
      const now = clock.now().getTime();
      const started = performance.now();
      const budgetMs = options.budgetMs ?? PURGE_BUDGET_MS;
      let deleted = 0;
      for (const status of ['succeeded', 'failed'] as const) {
        const before = new Date(now - FINISHED_JOB_RETENTION[status]).toISOString();
        const result = await purgeInBatches((limit) => deleteFinished(status, before, limit), {
          ...options,
          budgetMs: Math.max(0, budgetMs - (performance.now() - started)),
        });
        deleted += result.deleted;
        if (!result.complete) return { deleted, complete: false };
      }
      return { deleted, complete: true };
    },

    /**
     * Warns, once per name, of queued jobs that have waited over `STRANDED_AFTER_MS` and that this
     * version does not know: workers claim only names they know, so nothing runs those until a
     * version that knows them is deployed or someone deletes them.
     */
    async reportStranded(): Promise<StrandedJobs[]> {
      const before = new Date(clock.now().getTime() - STRANDED_AFTER_MS).toISOString();
      const rows = await db
        .selectFrom('jobs')
        .select(['name', sql<number | string>`count(*)`.as('count')])
        .where('status', '=', 'queued')
        .where('run_at', '<', before)
        .where('name', 'not in', known)
        .groupBy('name')
        .orderBy('name')
        .execute();
      const stranded = rows.map((row) => ({ name: row.name, count: Number(row.count) }));
      for (const { name, count } of stranded) {
        log.warn(
          { job: name, count },
          'queued jobs of a name this version does not know have waited over an hour: deploy a version that runs them, or delete them',
        );
      }
      return stranded;
    },
  };
}

export type QueueMaintenance = ReturnType<typeof createQueueMaintenance>;

/** The queue's own jobs, registered beside the modules' ones. */
export function queueMaintenanceJobs(deps: Parameters<typeof createQueueMaintenance>[0]): JobRegistration[] {
  const maintenance = createQueueMaintenance(deps);
  return [
    handleJob(jobPurge, async (_payload, context) => {
      await maintenance.purgeFinished({ signal: context.signal });
      await maintenance.reportStranded();
    }),
  ];
}
