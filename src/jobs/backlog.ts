import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';

/**
 * The most rows of each kind (due, running) one read of the backlog looks at. A read runs on every
 * metrics scrape, on SQLite through the one connection every request shares: past this many due jobs
 * the queue is in trouble whatever the exact figure, and counting further would make every scrape
 * slower exactly when the store is busiest.
 */
export const BACKLOG_READ_LIMIT = 10_000;

export interface JobNameBacklog {
  /** Queued jobs whose `run_at` has come: waiting for a worker. */
  due: number;
  /** The `run_at` of the one that has waited longest; undefined when none is due. */
  oldestDueAt: string | undefined;
  /** Claimed by a worker, including any whose lease ran out (its worker died; it is due again). */
  running: number;
}

export interface JobBacklog {
  byName: Map<string, JobNameBacklog>;
  /**
   * False when the read stopped at `limit` due or running jobs: the counts are then lower bounds,
   * taken from the jobs that have waited longest, and a name whose jobs all came later is missing.
   */
  complete: boolean;
}

/**
 * What is waiting in the queue at `now`, per job name, in one statement: the due jobs longest waiting
 * first, up to `limit`, through the `(status, run_at)` index, and up to `limit` running ones, each
 * range in a derived table of its own (where a LIMIT may stand inside a UNION on both backends, as in
 * the worker's claim), then grouped. Jobs due later (retries, timers, scheduled sends) are not counted.
 */
export async function readJobBacklog(db: Db, now: Date, limit = BACKLOG_READ_LIMIT): Promise<JobBacklog> {
  const due = db
    .selectFrom('jobs')
    .select(['name', 'status', 'run_at'])
    .where('status', '=', 'queued')
    .where('run_at', '<=', now.toISOString())
    .orderBy('run_at')
    .limit(limit);
  const running = db.selectFrom('jobs').select(['name', 'status', 'run_at']).where('status', '=', 'running').limit(limit);
  const rows = await db
    .selectFrom(
      db
        .selectFrom(due.as('due'))
        .selectAll()
        .unionAll(db.selectFrom(running.as('running')).selectAll())
        .as('backlog'),
    )
    .select(['name', 'status', sql<number | string>`count(*)`.as('count'), sql<string>`min(run_at)`.as('oldest')])
    .groupBy(['name', 'status'])
    .execute();
  const byName = new Map<string, JobNameBacklog>();
  const totals = { queued: 0, running: 0 };
  for (const row of rows) {
    const count = Number(row.count);
    const entry = byName.get(row.name) ?? { due: 0, oldestDueAt: undefined, running: 0 };
    if (row.status === 'queued') {
      entry.due = count;
      entry.oldestDueAt = row.oldest;
      totals.queued += count;
    } else {
      entry.running = count;
      totals.running += count;
    }
    byName.set(row.name, entry);
  }
  return { byName, complete: totals.queued < limit && totals.running < limit };
}
