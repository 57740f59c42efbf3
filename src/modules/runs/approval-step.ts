/**
 * The `request_approval` step, as the run engine sees it: what a run files with the approvals module
 * when it reaches the step (the action step rendered now, frozen), and the frozen plan it carries
 * out once approved. An approved run keeps the plan in `approved_action` until it has moved past the
 * action step, so the step runs the snapshot even when it pauses first for want of control.
 */
import type { RunsTable } from '../../db/schema.ts';
import type { ApprovalRequest } from '../approvals/index.ts';
import type { Definition, StepOf } from '../automations/definition.schemas.ts';
import { describeAction, stepOf, type StepPlan } from './run-steps.ts';

/** The frozen action, as a run keeps it between the decision and its action step. */
interface FrozenAction {
  step_id: string;
  plan: StepPlan;
}

/** The approval a run files for its step, waiting at `seq`. */
export function approvalRequest(
  row: RunsTable,
  step: StepOf<'request_approval'>,
  plan: Extract<StepPlan, { kind: 'request_approval' }>,
  seq: number,
  definition: Definition,
): ApprovalRequest {
  const actionStep = stepOf(definition, plan.actionStepId)!;
  return {
    organizationId: row.organization_id,
    mode: row.mode,
    connectionId: row.connection_id,
    runId: row.id,
    runSeq: seq,
    automationId: row.automation_id,
    stepId: step.id,
    title: plan.title,
    summary: plan.summary,
    action: describeAction(actionStep, plan.action),
    plan: { step_id: actionStep.id, plan: plan.action } satisfies FrozenAction,
    approvers: { roles: step.approvers.roles ?? [], member_ids: step.approvers.member_ids ?? [], allow_api_keys: step.approvers.allow_api_keys ?? false },
    expiresAt: plan.until,
    triggeredBy: row.triggered_by,
    triggeredByMemberId: row.triggered_by_member_id,
  };
}

/** The plan an approval froze for `stepId`, if the run carries one for that step. */
export function frozenActionOf(row: Pick<RunsTable, 'approved_action'>, stepId: string): StepPlan | undefined {
  if (row.approved_action === null) return undefined;
  const frozen = JSON.parse(row.approved_action) as FrozenAction;
  return frozen.step_id === stepId ? frozen.plan : undefined;
}
