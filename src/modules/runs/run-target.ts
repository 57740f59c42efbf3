/**
 * What a schedule's occurrence creates when its target is an automation: a run, triggered by the
 * schedule. The two calls the schedules module makes on runs, as notifications' are in
 * notification-target.ts: checking a target when a schedule is written, starting its run when an
 * occurrence fires.
 */
import type { Trx } from '../../db/connect.ts';
import type { Principal } from '../credentials/principal.ts';
import type { AutomationTarget } from '../schedules/schedules.schemas.ts';

export interface RunTargets {
  /**
   * Checks a target as `POST /v1/runs` would (the automation visible to the caller, the input against
   * its `input_schema`, the conversation), reading only; refusals name their field under `param`.
   * Answers the connection the schedule then belongs to (the automation's or the conversation's).
   */
  checkTarget(principal: Principal, target: AutomationTarget, param: string): Promise<{ target: AutomationTarget; connectionId: string | null }>;
  /**
   * Starts the occurrence's run in the fire job's transaction (trigger `schedule`). An automation no
   * longer enabled, an input its deployed version refuses or a conversation held by another run
   * throws an AppError, which the occurrence records as its failure.
   */
  createForOccurrence(
    trx: Trx,
    input: { organizationId: string; scheduleId: string; occurrenceId: string; target: AutomationTarget },
  ): Promise<{ run_id: string }>;
}
