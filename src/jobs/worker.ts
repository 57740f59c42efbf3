import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { compileOnce } from '../db/compiled-query.ts';
import type { Db, Trx } from '../db/connect.ts';
import type { CommitWithRequests } from '../db/request-transaction.ts';
import type { JobsTable } from '../db/schema.ts';
import type { WakeSignal } from '../db/wake-signal.ts';
import { SECOND, type Clock } from '../lib/clock.ts';
import { JOBS } from './catalog.ts';
import { JobError, isRecurring, isRetryable, type JobDefinition, type JobPayload } from './job.ts';
import { createScheduler } from './scheduler.ts';

export interface JobContext {
  readonly id: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted when the attempt times out or the worker shuts down. */
  readonly signal: AbortSignal;
  /**
   * The previous attempt's worker was lost in the middle of it (its lease ran out): that attempt's
   * outcome is unknown and nothing recorded it, so a handler that logs attempts may record it now.
   */
  readonly previousAttemptLost: boolean;
  /**
   * Runs `write` in the transaction that records this attempt's outcome, so the attempt's own record
   * (a delivery attempt, a webhook marked processed) and the job's status commit together: never one
   * without the other, and no commit of its own. Called before the handler returns or throws; a write
   * that throws turns the attempt into that failure (retried if it says retrying can help), and the
   * job's status is then recorded without it. Writes are dropped when the attempt is handed back
   * (shutdown) and when its time ran out first.
   */
  inSettle(write: SettleWrite): void;
  /**
   * As `inSettle`, for a write that attempts make alike: `item` joins those the other attempts of the
   * same settle transaction gave the same `write`, which runs once with them all (one multi-row
   * insert, one counter moved by their sum) instead of once per attempt.
   */
  inSettleBatch<T>(write: SettleBatchWrite<T>, item: T): void;
}

/** A write that belongs to an attempt's outcome; it may run twice (a batch that failed is retried job by job). */
export type SettleWrite = (trx: Trx) => Promise<void>;

/**
 * A write shared by the attempts of a settle transaction, told apart by identity: made once (at a
 * service's creation), never per attempt. It may run again with fewer items (a batch that failed is
 * retried job by job).
 */
export interface SettleBatchWrite<T> {
  run(trx: Trx, items: readonly T[]): Promise<void>;
}

export type JobHandler<D extends JobDefinition> = (payload: JobPayload<D>, context: JobContext) => Promise<void>;

/** A catalogued job and the handler that runs it: what a module (or the queue itself) hands the worker. */
export interface JobRegistration {
  readonly definition: JobDefinition;
  readonly handler: JobHandler<JobDefinition>;
}

/** Pairs a catalogued job with its handler, keeping the payload typed on both sides. */
export function handleJob<D extends JobDefinition>(definition: D, handler: JobHandler<D>): JobRegistration {
  return { definition, handler };
}

export interface WorkerLog {
  error(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface WorkerOptions {
  db: Db;
  /** The store's: the claims and the settles commit with the requests' (grouped on SQLite, db/request-transaction.ts). */
  commitWithRequests: CommitWithRequests;
  clock: Clock;
  log: WorkerLog;
  /** Jobs run at once by this worker. */
  concurrency?: number;
  /** How long a claimed job belongs to this worker; past it, another worker may take it. */
  leaseMs?: number;
  /** How long to wait before looking again when nothing was due. */
  pollMs?: number;
  /** Most finished attempts recorded in one transaction (default: `concurrency`). */
  settleBatch?: number;
  /**
   * Whether other processes enqueue into this queue too (a database several service processes
   * share). A freed slot then always claims: jobs may be waiting that no wake-up here announced, and
   * a worker whose claim came back short because another took the jobs would otherwise sit out the
   * poll. Default false: every job is enqueued here, so a freed slot claims only while a backlog is
   * known.
   */
  sharedQueue?: boolean;
  /**
   * The other processes' announcements of jobs they enqueued (the store's `wakeSignal` on
   * PostgreSQL): heard while the worker runs, each wakes it as its own enqueues do.
   */
  wakeSignal?: Pick<WakeSignal, 'listen'> | undefined;
  /**
   * The jobs this version of the service knows (default: `JOBS`). Only these may be registered, each
   * must have a handler before the worker starts, and the recurring ones among them are scheduled.
   */
  catalog?: readonly JobDefinition[];
}

/**
 * How far a job this process cannot run is pushed when it has claimed one anyway: far enough that it
 * does not spin on it, near enough that a worker that knows it takes it soon.
 */
export const HAND_BACK_DELAY_MS = 30 * SECOND;

/** `last_error` of a job taken over after its lease ran out: the attempt before is the lost one. */
export const LOST_ATTEMPT_ERROR = 'worker_lost: the lease ran out during the previous attempt';

/**
 * Claims up to `limit` due jobs of `names` in one statement (no transaction of its own): a CTE picks
 * them, the update marks them running under the worker's lease and returns them. On PostgreSQL the
 * CTE's rows are locked `SKIP LOCKED`, so concurrent claims (other processes) take disjoint jobs.
 * Compiled once (db/compiled-query.ts): a busy worker claims hundreds of times a second.
 *
 * The (status, run_at) index stays the path: the name is checked on the rows it yields, which are
 * nearly all known ones. Two ranges rather than one OR: each is a range of that index read in order,
 * where an OR made the store sort every due job to pick the next few. A running job whose lease ran
 * out belongs to a worker that died; it goes first. Each range sits in a derived table of its own,
 * which is where a LIMIT (and PostgreSQL's row lock) may stand inside a UNION on both backends.
 */
const claimDue = compileOnce((db, p: { names: string[]; now: string; leaseUntil: string; limit: number; workerId: string }, dialect) => {
  const expired = dialect.lockSkipLocked(
    db.selectFrom('jobs').select('id').where('status', '=', 'running').where('locked_until', '<', p.now).where('name', 'in', p.names).limit(p.limit),
  );
  const queued = dialect.lockSkipLocked(
    db
      .selectFrom('jobs')
      .select('id')
      .where('status', '=', 'queued')
      .where('run_at', '<=', p.now)
      .where('name', 'in', p.names)
      .orderBy('run_at')
      .limit(p.limit),
  );
  return db
    .with('due', (qb) =>
      qb
        .selectFrom(expired.as('expired'))
        .select('id')
        .unionAll(qb.selectFrom(queued.as('queued')).select('id'))
        .limit(p.limit),
    )
    .updateTable('jobs')
    .set({
      status: 'running',
      locked_by: p.workerId,
      locked_until: p.leaseUntil,
      attempts: sql<number>`attempts + 1`,
      // The right-hand side reads the row as it was: a job still `running` is one taken over.
      last_error: sql<string | null>`case when status = 'running' then ${LOST_ATTEMPT_ERROR} else last_error end`,
      updated_at: p.now,
    })
    .where('id', 'in', (qb) => qb.selectFrom('due').select('due.id'))
    .returningAll();
});

/** Succeeded attempts of one attempt number, recorded where the worker still holds their lease. */
const settleSucceeded = compileOnce((db, p: { ids: string[]; workerId: string; attempts: number; updatedAt: string }) =>
  db
    .updateTable('jobs')
    .set({ status: 'succeeded', last_error: null, locked_by: null, locked_until: null, updated_at: p.updatedAt })
    .where('id', 'in', p.ids)
    .where('locked_by', '=', p.workerId)
    .where('attempts', '=', p.attempts),
);

type Outcome = Pick<JobsTable, 'status' | 'last_error'> & Partial<Pick<JobsTable, 'run_at'>>;

/** A finished attempt waiting for its settle transaction. */
interface Settlement {
  job: JobsTable;
  definition: JobDefinition;
  outcome: Outcome;
  writes: SettleWrite[];
  batched: BatchedItem[];
  done: { resolve: () => void; reject: (error: unknown) => void };
}

interface BatchedItem {
  write: SettleBatchWrite<unknown>;
  item: unknown;
}

interface Registered {
  definition: JobDefinition;
  handler: JobHandler<JobDefinition>;
}

/**
 * Runs due jobs. Claiming marks jobs running under a lease; a worker that dies leaves its jobs to
 * come back when the lease ends. Several workers (in several processes) share one queue: on
 * PostgreSQL they claim with `FOR UPDATE SKIP LOCKED`, on SQLite the single writer serialises them.
 * A worker claims only the jobs it has a handler for: during a rolling deploy, a job only the new
 * version knows waits for a new worker instead of being failed by an old one.
 */
export function createWorker(options: WorkerOptions) {
  const { db, commitWithRequests, clock, log } = options;
  const catalog = new Map((options.catalog ?? JOBS).map((definition) => [definition.name, definition]));
  const scheduler = createScheduler({ db, clock, jobs: [...catalog.values()].filter(isRecurring) });
  const concurrency = options.concurrency ?? 16;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollMs = options.pollMs ?? 100;
  const settleBatch = options.settleBatch ?? concurrency;
  const workerId = `wrk_${randomBytes(6).toString('hex')}`;
  // Claim in batches: refilling one slot each time a job finishes would cost a claim per job.
  const refillBelow = Math.max(1, Math.floor(concurrency / 2));
  const handlers = new Map<string, Registered>();
  // A job holds its slot until its outcome is committed: the wait for the settle transaction is part
  // of the attempt, so a burst is claimed and settled in batches rather than one job at a time.
  const inFlight = new Map<string, { promise: Promise<void>; abort: AbortController; attempts: number; handlerDone: boolean }>();
  let running = false;
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  /**
   * A wake-up that came while the loop was not asleep (mid-claim): the claim may have started before
   * the enqueue committed and missed the job, so the loop looks again instead of sleeping a poll.
   */
  let wakePending = false;
  /** Resolves to the function that stops hearing other processes' announcements, while running. */
  let stopListening: Promise<() => Promise<void>> | undefined;
  /**
   * Whether more jobs may be due than the worker last saw: its last claim took all it asked for, or
   * something was enqueued since. A finished job frees a slot, and the slot is worth a claim only
   * then: with the queue drained, a claim per finished job would find nothing, and on SQLite each
   * such claim costs as much as a full one. Jobs that come due by time are found by the poll, and
   * so are those other processes enqueue, unless the queue is shared (`sharedQueue`).
   */
  let backlog = true;
  const sharedQueue = options.sharedQueue ?? false;
  /** A claim is running (the loop's, or one beside a settle): its slots are spoken for. */
  let claiming = false;
  function rouse(): void {
    if (wakeUp) wakeUp();
    else wakePending = true;
  }
  function wake(): void {
    backlog = true;
    rouse();
  }
  function slotFreed(): void {
    if (backlog || sharedQueue) rouse();
  }

  /** Claims up to `limit` due jobs this worker has handlers for (claimDue); other names are left to workers that know them. */
  function claim(limit: number): Promise<JobsTable[]> {
    return commitWithRequests(() => claimWith(db, limit));
  }

  /** As `claim`, in the caller's transaction (on SQLite, a settle's: one commit for both). */
  async function claimWith(executor: Db | Trx, limit: number): Promise<JobsTable[]> {
    const names = [...handlers.keys()];
    if (names.length === 0) return [];
    const now = clock.now();
    return claimDue.all(executor, { names, now: now.toISOString(), leaseUntil: new Date(now.getTime() + leaseMs).toISOString(), limit, workerId });
  }

  /**
   * Returns a claimed job to the queue without counting the attempt: at `runAt` (default: when it
   * was due), lease released. Only while this worker still holds it.
   */
  async function handBack(id: string, attempts: number, runAt?: Date): Promise<void> {
    await db
      .updateTable('jobs')
      .set({
        status: 'queued',
        locked_by: null,
        locked_until: null,
        attempts: attempts - 1,
        updated_at: clock.now().toISOString(),
        ...(runAt ? { run_at: runAt.toISOString() } : {}),
      })
      .where('id', '=', id)
      .where('locked_by', '=', workerId)
      .where('attempts', '=', attempts)
      .execute();
  }

  function nextRunAt(error: unknown, definition: JobDefinition, attempts: number): Date {
    if (error instanceof JobError && error.retryAt) return error.retryAt;
    return new Date(clock.now().getTime() + definition.retry.delayMs(attempts));
  }

  /** What a failed attempt leaves on its job: queued again at its next time, or failed for good. */
  function failure(job: JobsTable, definition: JobDefinition, error: unknown): Outcome {
    const message = error instanceof Error ? error.message : String(error);
    const again = isRetryable(error) && job.attempts < job.max_attempts;
    if (!again) log.warn({ job_id: job.id, job: job.name, attempts: job.attempts, err: error }, 'job failed for good');
    return again
      ? { status: 'queued', run_at: nextRunAt(error, definition, job.attempts).toISOString(), last_error: message }
      : { status: 'failed', last_error: message };
  }

  // Finished attempts wait here for the next settle transaction. One is committed at a time: while it
  // runs, the attempts that finish meanwhile gather into the next, so a busy worker commits many
  // outcomes at once. The first waits for the end of the event loop's turn (setImmediate, not a
  // timer): the answers that arrived in the same turn (a burst's receivers answer together) settle
  // with it, where committing at once made a transaction of most of them alone.
  const settling: Settlement[] = [];
  let flushing = false;

  function settle(settlement: Omit<Settlement, 'done'>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      settling.push({ ...settlement, done: { resolve, reject } });
      if (!flushing) {
        flushing = true;
        setImmediate(() => void flush());
      }
    });
  }

  async function flush(): Promise<void> {
    try {
      while (settling.length > 0) {
        const batch = settling.splice(0, settleBatch);
        const refill = refillBeside(batch.length);
        if (refill > 0) {
          claiming = true;
          backlog = false;
        }
        try {
          const claimed = await commitWithRequests(async () => {
            await db.transaction().execute((trx) => settleBatchIn(trx, batch));
            return refill > 0 ? claimBeside(refill) : [];
          });
          if (claimed.length === refill && refill > 0) backlog = true;
          // Started before the batch's slots are given back, so that those slots see them.
          for (const job of claimed) void start(job);
          for (const entry of batch) entry.done.resolve();
        } catch {
          if (refill > 0) backlog = true;
          // One attempt's write failed (or the store did): each is tried again in a transaction of its
          // own, so the others are recorded and only that attempt takes the failure.
          for (const entry of batch) await settleAlone(entry);
        } finally {
          if (refill > 0) claiming = false;
        }
      }
    } finally {
      flushing = false;
    }
  }

  /**
   * The claim of a settle transaction, after its writes. Its failure is not the settle's: the outcomes
   * stay recorded (on PostgreSQL they are committed already), and the loop claims instead.
   */
  async function claimBeside(limit: number): Promise<JobsTable[]> {
    try {
      return await claimWith(db, limit);
    } catch (error) {
      backlog = true;
      log.error({ err: error }, 'claiming jobs beside a settle failed; the loop claims instead');
      return [];
    }
  }

  /**
   * How many jobs to claim in the transaction that settles `settled` attempts: the slots they leave
   * free when the loop would refill them anyway, so that on SQLite the claim shares the settle's commit
   * instead of making one of its own right after it. None while another claim runs (the slots are
   * counted once) or when nothing is known to wait.
   */
  function refillBeside(settled: number): number {
    const staying = inFlight.size - settled;
    if (!running || claiming || staying >= refillBelow || !(backlog || sharedQueue)) return 0;
    return concurrency - staying;
  }

  async function settleAlone(entry: Settlement): Promise<void> {
    try {
      await db.transaction().execute((trx) => settleBatchIn(trx, [entry]));
      entry.done.resolve();
      return;
    } catch (error) {
      if (entry.writes.length === 0 && entry.batched.length === 0) return entry.done.reject(error);
      // The attempt's own write is what failed: record that failure, without the write.
      entry.writes = [];
      entry.batched = [];
      entry.outcome = failure(entry.job, entry.definition, error);
    }
    try {
      await db.transaction().execute((trx) => settleBatchIn(trx, [entry]));
      entry.done.resolve();
    } catch (error) {
      entry.done.reject(error);
    }
  }

  /**
   * Each attempt's writes, then the jobs' outcomes, recorded only where this worker still holds the
   * lease (worker id and attempt): a worker presumed dead that comes back cannot overwrite its
   * successor's result. Successes differ only by their attempt number, so they take one statement
   * per number (nearly always one); a failure carries its own time and error.
   */
  async function settleBatchIn(trx: Trx, batch: Settlement[]): Promise<void> {
    for (const entry of batch) for (const write of entry.writes) await write(trx);
    const batchedWrites = new Map<SettleBatchWrite<unknown>, unknown[]>();
    for (const entry of batch) {
      for (const { write, item } of entry.batched) {
        const items = batchedWrites.get(write);
        if (items) items.push(item);
        else batchedWrites.set(write, [item]);
      }
    }
    for (const [write, items] of batchedWrites) await write.run(trx, items);
    const updatedAt = clock.now().toISOString();
    const released = { locked_by: null, locked_until: null, updated_at: updatedAt };
    const succeeded = new Map<number, string[]>();
    for (const { job, outcome } of batch) {
      if (outcome.status === 'succeeded') {
        const ids = succeeded.get(job.attempts) ?? [];
        ids.push(job.id);
        succeeded.set(job.attempts, ids);
        continue;
      }
      await trx
        .updateTable('jobs')
        .set({ ...outcome, ...released })
        .where('id', '=', job.id)
        .where('locked_by', '=', workerId)
        .where('attempts', '=', job.attempts)
        .execute();
    }
    for (const [attempts, ids] of succeeded) await settleSucceeded.run(trx, { ids, workerId, attempts, updatedAt });
  }

  async function execute(job: JobsTable, abort: AbortController, handlerDone: () => void): Promise<void> {
    const registered = handlers.get(job.name);
    if (!registered) {
      // Claims ask for known names only, so this is a safety net: a job is never failed for want of
      // a handler, since another version of the service may have one.
      log.warn({ job_id: job.id, job: job.name }, 'no handler for this job here; handed back for another worker');
      await handBack(job.id, job.attempts, new Date(clock.now().getTime() + HAND_BACK_DELAY_MS));
      return;
    }
    const { definition } = registered;
    const timeoutMs = definition.timeoutMs;
    const timer = setTimeout(() => abort.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    const writes: SettleWrite[] = [];
    const batched: BatchedItem[] = [];
    // Closed once the outcome is decided: a handler still running after its time-out adds nothing.
    let open = true;
    let outcome: Outcome;
    try {
      const payload = JSON.parse(job.payload) as unknown;
      const context: JobContext = {
        id: job.id,
        attempt: job.attempts,
        maxAttempts: job.max_attempts,
        signal: abort.signal,
        previousAttemptLost: job.last_error === LOST_ATTEMPT_ERROR,
        inSettle: (write) => void (open && writes.push(write)),
        inSettleBatch: (write, item) => void (open && batched.push({ write, item })),
      };
      await Promise.race([
        registered.handler(payload, context),
        new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true })),
      ]);
      // A handler that returns after its time ran out still timed out: its work may be half done.
      if (abort.signal.aborted) throw abort.signal.reason;
      outcome = { status: 'succeeded', last_error: null };
    } catch (error) {
      // Aborted by `stop`: the job goes back to the queue uncounted there, not as a failed attempt.
      if (stopping && abort.signal.aborted) return;
      if (abort.signal.aborted) {
        writes.length = 0;
        batched.length = 0;
      }
      outcome = failure(job, definition, error);
    } finally {
      open = false;
      clearTimeout(timer);
    }
    handlerDone();
    await settle({ job, definition, outcome, writes, batched });
  }

  function start(job: JobsTable): Promise<void> {
    const abort = new AbortController();
    const entry = { promise: Promise.resolve(), abort, attempts: job.attempts, handlerDone: false };
    entry.promise = execute(job, abort, () => (entry.handlerDone = true))
      .catch((error: unknown) => log.error({ job_id: job.id, err: error }, 'could not record a job outcome'))
      .finally(() => {
        inFlight.delete(job.id);
        slotFreed();
      });
    inFlight.set(job.id, entry);
    return entry.promise;
  }

  function assertComplete(): void {
    const missing = [...catalog.keys()].filter((name) => !handlers.has(name));
    if (missing.length > 0) throw new Error(`no handler registered for job${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  }

  async function runLoop(): Promise<void> {
    while (running) {
      try {
        await scheduler.tick();
      } catch (error) {
        log.error({ err: error }, 'scheduling recurring jobs failed; retrying');
      }
      let claimed: JobsTable[] = [];
      if (inFlight.size < refillBelow && !claiming) {
        // Whatever was committed before this point, the claim sees; a wake-up during the claim sets
        // both flags again.
        wakePending = false;
        backlog = false;
        claiming = true;
        const limit = concurrency - inFlight.size;
        try {
          claimed = await claim(limit);
          if (claimed.length === limit) backlog = true;
        } catch (error) {
          backlog = true;
          log.error({ err: error }, 'claiming jobs failed; retrying');
        } finally {
          claiming = false;
        }
        for (const job of claimed) void start(job);
      }
      // A claim that took fewer than it asked for found the queue drained, and one that took all
      // filled every slot: either way the next claim waits for a wake-up, a freed slot or the poll.
      // In a shared queue a short claim may only mean that another worker took the rest: look again.
      if (sharedQueue && claimed.length > 0 && inFlight.size < refillBelow) continue;
      if (wakePending) {
        wakePending = false;
        continue;
      }
      // Stopped while it claimed: the wake-up of stop may have come before the claim cleared it.
      if (!running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  }

  return {
    id: workerId,
    /** Jobs run at once. */
    concurrency,

    register<D extends JobDefinition>(definition: D, handler: JobHandler<D>): void {
      if (!catalog.has(definition.name)) throw new Error(`job ${definition.name} is not in the catalogue (src/jobs/catalog.ts)`);
      if (handlers.has(definition.name)) throw new Error(`job ${definition.name} has two handlers`);
      handlers.set(definition.name, { definition, handler: handler });
    },

    /** Throws, naming them, when catalogued jobs have no handler: called at start-up, so a forgotten one stops it. */
    assertComplete,

    /** Tells an idle worker to look now (after a local enqueue) instead of at its next poll. */
    wake,

    start(): void {
      if (running) return;
      assertComplete();
      running = true;
      loop = runLoop();
      stopListening = options.wakeSignal?.listen(wake);
    },

    /**
     * Stops claiming, gives running jobs until `graceMs` to finish, then aborts the rest and hands
     * them back to the queue at once (rather than after their lease), attempt uncounted.
     */
    async stop(graceMs = 10_000): Promise<void> {
      running = false;
      const stopHearing = await stopListening;
      stopListening = undefined;
      await stopHearing?.();
      // Not wakeUp: a loop in the middle of a claim would miss it and sleep a whole poll before it
      // saw that it must stop (an hour, in tests that set one).
      rouse();
      await loop;
      const deadline = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([Promise.allSettled([...inFlight.values()].map((job) => job.promise)), deadline]);
      // Only attempts still running are cut off; those already done are waiting for their commit.
      const unfinished = [...inFlight.entries()].filter(([, job]) => !job.handlerDone);
      stopping = true;
      for (const [, job] of unfinished) job.abort.abort(new Error('worker stopping'));
      for (const [id, job] of unfinished) await handBack(id, job.attempts);
      await Promise.allSettled([...inFlight.values()].map((job) => job.promise));
    },

    /**
     * Runs every job that is due now (the current slot of each recurring job included), and those
     * they make due, until none is left: for tests and tools that move a manual clock and want the
     * consequences at once.
     */
    async drain(): Promise<number> {
      await scheduler.tick();
      let count = 0;
      for (;;) {
        const claimed = await claim(concurrency);
        if (claimed.length === 0) return count;
        count += claimed.length;
        await Promise.all(claimed.map((job) => start(job)));
      }
    },
  };
}

export type Worker = ReturnType<typeof createWorker>;
