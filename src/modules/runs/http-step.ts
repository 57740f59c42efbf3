/**
 * The `http_request` step of a live run: a call to another system through a connector account,
 * which must never happen inside a database transaction and must be recorded before it happens.
 *
 * 1. In the step's transaction (compare-and-set on `seq`) the request is logged
 *    (`effect.http_request {method, url, attempt}`, the URL without credentials) and committed.
 * 2. Then the call, through the account: credentials added to the rendered request, allowed hosts
 *    only, the guarded client, `Idempotency-Key: <run_id>:<seq>`.
 * 3. In a second transaction, compare-and-set on the same `seq`, the answer is logged
 *    (`effect.http_response`), saved under `save_as`, and the run goes on to `branches.ok` (2xx)
 *    or `branches.error` (anything else; a run with no error branch fails).
 *
 * A 5xx or a network failure is retried by the step's job (a retryable JobError) up to
 * HTTP_ATTEMPTS; the last one takes the error branch. A worker that dies between 2 and 3 leaves the
 * job to run again: it finds the step begun (its last log entry is the request) and calls again
 * with the same Idempotency-Key, so a receiver that honours the key acts once.
 */
import type { Db, Trx } from '../../db/connect.ts';
import type { RunsTable } from '../../db/schema.ts';
import { JobError } from '../../jobs/job.ts';
import { AppError } from '../../lib/errors.ts';
import type { AccountUser, ConnectorResult, ConnectorsService } from '../connectors/index.ts';
import type { StepPlan } from './run-steps.ts';
import type { RunsStore } from './runs.store.ts';

/** Attempts of one request, at most (the step job's own schedule spaces them: 2 s, then 10 s). */
export const HTTP_ATTEMPTS = 3;

export type HttpPlan = Extract<StepPlan, { kind: 'http' }>;

/** Which attempt of the step's job this is. */
export interface Attempt {
  attempt: number;
  maxAttempts: number;
}

/** A request recorded and committed, to be sent now. */
export interface PendingHttp {
  runId: string;
  seq: number;
  stepId: string;
  user: AccountUser;
  plan: HttpPlan;
  url: string;
}

/** What this file uses of the engine's RunChange (run-engine.ts), which imports this file. */
export interface RunChange {
  readonly row: RunsTable;
  note(type: string, stepId: string | null, data?: Record<string, unknown>): void;
  save(trx: Trx, store: RunsStore): Promise<void>;
}

export interface HttpStepDeps {
  db: Db;
  store: RunsStore;
  connectors: Pick<ConnectorsService, 'resolve' | 'call'>;
  /** The engine's own moves (run-engine.ts), so that an HTTP step ends as every step does. */
  changeOf(row: RunsTable): RunChange;
  advance(trx: Trx, change: RunChange, next: string | null): Promise<void>;
  fail(trx: Trx, change: RunChange, code: string, message: string): Promise<void>;
  setVariables(change: RunChange, variables: Record<string, unknown>): void;
}

const userOf = (row: RunsTable): AccountUser => ({ organizationId: row.organization_id, mode: row.mode, connectionId: row.connection_id });
const isLastAttempt = (attempt: Attempt) => attempt.attempt >= Math.min(HTTP_ATTEMPTS, attempt.maxAttempts);

/** The answer as a step saves it: status, headers (never a cookie), body (parsed when JSON). */
function savedAnswer(result: Extract<ConnectorResult, { kind: 'response' }>): Record<string, unknown> {
  const { 'set-cookie': _cookie, ...headers } = result.headers;
  return { status: result.status, headers, body: result.body };
}

export function createHttpStep(deps: HttpStepDeps) {
  const { db, store, connectors } = deps;

  /** The step failed: to `branches.error` when it has one, otherwise the run fails with the code. */
  async function takeError(trx: Trx, change: RunChange, plan: HttpPlan, code: string, message: string): Promise<void> {
    change.note('step.failed', change.row.current_step_id, { code, message });
    if (plan.error !== null) return deps.advance(trx, change, plan.error);
    await deps.fail(trx, change, code, message);
  }

  return {
    /** Whether this step already sent its request (a retry, or a worker lost after the call): its last log entry says so. */
    async begun(trx: Trx, row: RunsTable): Promise<boolean> {
      const [last] = await store.listEvents(trx, row.id, row.event_count - 1, 1);
      return last !== undefined && last.step_id === row.current_step_id && (last.type === 'effect.http_request' || last.type === 'effect.http_response');
    },

    /**
     * In the step's transaction: logs the request about to be sent and answers it, to be sent once
     * the transaction commits. An account or URL that refuses the request takes the error branch
     * here, with nothing sent.
     */
    async record(trx: Trx, change: RunChange, plan: HttpPlan, attempt: Attempt): Promise<PendingHttp | undefined> {
      const { row } = change;
      let url: string;
      try {
        url = await connectors.resolve(trx, userOf(row), plan.request.accountId, plan.request, '/connector_account_id');
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        await takeError(trx, change, plan, error.code, error.message);
        return undefined;
      }
      change.note('effect.http_request', row.current_step_id, { method: plan.request.method, url, attempt: attempt.attempt });
      await change.save(trx, store);
      return { runId: row.id, seq: row.seq, stepId: row.current_step_id!, user: userOf(row), plan, url };
    },

    /** After the commit: the call, then its answer recorded by compare-and-set on the same `seq`. */
    async complete(pending: PendingHttp, attempt: Attempt): Promise<void> {
      const { plan } = pending;
      const result = await connectors.call(pending.user, plan.request.accountId, {
        method: plan.request.method,
        url: pending.url,
        body: plan.request.body,
        timeoutMs: plan.request.timeoutMs,
        idempotencyKey: `${pending.runId}:${pending.seq}`,
      });
      const transient = result.kind === 'failed' ? result.retryable : result.status >= 500;
      const retrying = transient && !isLastAttempt(attempt);
      const recorded = await db.transaction().execute(async (trx) => {
        const row = await store.lockById(trx, pending.runId);
        if (!row || row.seq !== pending.seq || row.status !== 'running') return false;
        const change = deps.changeOf(row);
        const entry = result.kind === 'response' ? { status: result.status } : { error: result.code, message: result.message };
        change.note('effect.http_response', pending.stepId, { ...entry, attempt: attempt.attempt, ...(retrying ? { retrying: true } : {}) });
        if (retrying) {
          await change.save(trx, store);
          return true;
        }
        if (result.kind === 'failed') return takeError(trx, change, plan, result.code, result.message).then(() => true);
        try {
          if (plan.saveAs !== null) deps.setVariables(change, { [plan.saveAs]: savedAnswer(result) });
        } catch (error) {
          return takeError(trx, change, plan, 'expression_failed', (error as Error).message).then(() => true);
        }
        if (result.status >= 200 && result.status <= 299) {
          change.note('step.completed', pending.stepId, { status: result.status });
          await deps.advance(trx, change, plan.ok);
          return true;
        }
        const code = result.status >= 500 ? 'provider_unavailable' : 'provider_rejected';
        await takeError(trx, change, plan, code, `${plan.request.method} ${pending.url} answered ${result.status}.`);
        return true;
      });
      if (recorded && retrying) {
        const why = result.kind === 'response' ? `answered ${result.status}` : result.code;
        throw new JobError(`http_request ${pending.url} ${why}; retrying`, { retryable: true });
      }
    },
  };
}

export type HttpStep = ReturnType<typeof createHttpStep>;
