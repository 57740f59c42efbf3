/**
 * The contract between automations and runs. Runs are built on automations (a run starts from a
 * deployed version); deploying, disabling and deleting an automation must settle its runs in flight.
 * So automations declare here what they ask of runs (`InFlightRuns`), the runs module hands its
 * implementation over with `attachRuns` once it exists, and neither imports the other's service.
 */
import type { Db, Trx } from '../../db/connect.ts';
import type { EventType } from '../../events/event-types.schemas.ts';
import type { Mode } from '../credentials/scopes.schemas.ts';
import type { Definition, TriggerType } from './definition.schemas.ts';

/** What happens to runs in flight when the deployed version changes or the automation is disabled. */
export const IN_FLIGHT_POLICIES = ['keep', 'cancel', 'migrate'] as const;
export type InFlightPolicy = (typeof IN_FLIGHT_POLICIES)[number];

export interface InFlightCounts {
  kept: number;
  canceled: number;
  migrated: number;
}

export interface InFlightRuns {
  /**
   * Applies a policy to the automation's active live runs, in the caller's transaction: `keep` leaves
   * them on their version, `cancel` ends them `canceled`, `migrate` moves waiting and paused runs whose
   * current step id exists in `definition` with the same type to version `toVersion` (the others are
   * kept). Disabling passes `migrate` nowhere: only `keep` or `cancel`.
   */
  settle(
    trx: Trx,
    input: {
      organizationId: string;
      automationId: string;
      /** Why: a canceled run's `outcome` says it (`canceled_by_deploy`, `canceled_by_disable`, `canceled_by_delete`). */
      cause: 'deploy' | 'disable' | 'delete';
      policy: InFlightPolicy;
      toVersion: number | null;
      definition: Definition | null;
    },
  ): Promise<InFlightCounts>;
  /** The versions runs of the automation were started on (never pruned while a run refers to them). */
  versionsInUse(db: Db | Trx, automationId: string): Promise<Set<number>>;
  /** Active runs (queued, running, waiting, paused) of the automation, live and dry alike. */
  countActive(db: Db | Trx, organizationId: string, automationId: string): Promise<number>;
}

/** An enabled automation's deployed version, as a run starts from it. */
export interface DeployedAutomation {
  automationId: string;
  organizationId: string;
  mode: Mode;
  connectionId: string | null;
  version: number;
  definition: Definition;
}

export type RunEnding = 'succeeded' | 'failed';

export interface AutomationsForRuns {
  /** Enabled automations whose deployed trigger is `type` (and, for `event`, that event type), oldest first. */
  deployedForTrigger(trx: Trx | Db, organizationId: string, trigger: { type: TriggerType; event?: EventType }): Promise<DeployedAutomation[]>;
  /**
   * One version of an automation of the organization, for `POST /v1/runs`: `version` or, without it,
   * the deployed one; undefined when the automation or the version does not exist (or was deleted).
   */
  versionForRun(db: Db | Trx, organizationId: string, automationId: string, version?: number): Promise<(DeployedAutomation & { status: string }) | undefined>;
  /**
   * Counts a live run's ending: a success resets the consecutive failures, the 10th failure in a row
   * disables the automation (`consecutive_failures`), with `automation.auto_disabled`, an audit entry
   * and a mail to the owners. Runs in flight continue.
   */
  recordRunEnded(trx: Trx, organizationId: string, automationId: string, ending: RunEnding): Promise<void>;
}
